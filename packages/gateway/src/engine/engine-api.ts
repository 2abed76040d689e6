import type {
  InferRequest,
  InferResponse,
  ModelLoadOptions,
  ModelMetadata,
  ModelStatistics,
  ModelUnloadOptions,
  RepositoryIndexEntry,
  ServerMetadata,
} from "@operon/protocol/inference";
import type { ModelScaling, OperatorValidation, WorkersResponse } from "@operon/protocol/admin";
import type { OperonError } from "@operon/protocol/errors";
import type { OnlineLatency } from "@operon/protocol/online-latency";
import type { OperatorSpec } from "@operon/operator-spec/operator-spec-schema";

/** A served operator: registered through the API, or a Triton ensemble of the model repository. */
export interface OperatorInfo {
  name: string;
  version: string;
  source: "api" | "repository";
  spec: OperatorSpec;
  /** Models its steps call that cannot serve now: while any is listed, the operator is degraded and not ready. */
  unreadyModels?: string[];
  /** Each step's circuit breaker state now (steps with a `circuitBreaker` only). */
  breakers?: Array<{ step: string; state: "closed" | "open" | "half-open" }>;
}

/**
 * The narrow surface the frontends (HTTP, gRPC) see of the engine. Frontends
 * never reach into the engine's classes. Every method throws OperonError
 * (from @operon/protocol/errors) with a kind the frontend maps to its status.
 */
/**
 * Gets each response of an inferStream request. `decoupled`: the model is
 * decoupled (its responses are a stream: Triton marks each with
 * triton_final_response), else this is its one response.
 */
export type StreamResponseHandler = (response: InferResponse | OperonError, final: boolean, decoupled: boolean) => void;

export interface InferenceEngine {
  serverMetadata(): ServerMetadata;
  isLive(): boolean;
  isReady(): boolean;
  /** A note on readiness that does not change it (Engine.setReadinessDetail); optional for test engines. */
  readinessDetail?(): string | undefined;
  /** False (never throws) when the model or version is unknown. */
  isModelReady(name: string, version?: string): boolean;
  /** Throws NOT_FOUND / UNAVAILABLE. */
  modelMetadata(name: string, version?: string): ModelMetadata;
  /** The model's complete config as Triton's JSON (snake_case keys, TYPE_* enums, ints as numbers). */
  modelConfig(name: string, version?: string): Record<string, unknown>;
  /**
   * One request, one response. A decoupled model (model_transaction_policy
   * { decoupled: true }) fails UNSUPPORTED: its responses need inferStream.
   */
  infer(request: InferRequest): Promise<InferResponse>;
  /**
   * One request, any number of responses, in order: a decoupled model's
   * responses as it sends them; any other model's one response (final).
   * onResponse gets each response or per-response error, and `final` true
   * exactly once, on the last call; a final response with no outputs is the
   * final flag alone (frontends decide whether to send it: Triton's
   * triton_enable_empty_final_response). The promise rejects (OperonError)
   * when the request fails before any response (unknown model, invalid
   * request, queue full or timed out, cancelled while queued), without
   * calling onResponse; otherwise it resolves after the final call. When
   * request.signal aborts after the request started, onResponse gets a
   * final CANCELLED error at once and nothing after it: the model cannot be
   * interrupted and runs on, its later responses dropped.
   */
  inferStream(request: InferRequest, onResponse: StreamResponseHandler): Promise<void>;
  /** True when the model (version) is served and decoupled; false (never throws) otherwise. */
  isDecoupled(name: string, version?: string): boolean;
  /**
   * Resolves once the model (version) is served, loading it again when the
   * resource scheduler parked it; rejects as a request to it would. For a
   * frontend that reads a model's metadata to build its request (generate).
   */
  whenServed(name: string, version?: string): Promise<void>;
  /** Reads the repositories, so it is async (models never loaded are listed too). */
  repositoryIndex(options: { ready?: boolean }): Promise<RepositoryIndexEntry[]>;
  /** Throws UNSUPPORTED when the model control mode is not explicit. */
  loadModel(name: string, options: ModelLoadOptions): Promise<void>;
  unloadModel(name: string, options: ModelUnloadOptions): Promise<void>;
  /**
   * The resource scheduler's levers (Operon admin extension). scaleModel
   * grows or shrinks every served version of a model to `count` instances
   * in place, no request dropped, and with `kind` moves them to that kind
   * (new instances first, then the old ones drained: no request dropped
   * either; UNAVAILABLE for KIND_GPU on a host without a GPU); INVALID_ARG past --max-instances-per-model
   * or --max-instances. parkModel unloads an idle model so that its next
   * request loads it again (the request waits or gets 503 + Retry-After,
   * by --parked-model-policy). parkedModels lists those unloaded so.
   * Optional: an engine without them answers UNSUPPORTED on those routes.
   */
  scaleModel?(
    name: string,
    count: number,
    kind?: "KIND_CPU" | "KIND_GPU",
  ): Promise<{ model: string; from: number; to: number; kind: "KIND_CPU" | "KIND_GPU" }>;
  parkModel?(name: string): Promise<void>;
  parkedModels?(): string[];
  /** Each served model's instance count now and as its config asked (the scheduler never goes below the latter on its own). */
  scalingState?(): ModelScaling[];
  /** Each served operator's requests in flight now and its completed calls per model (GET /v2/operon/scaling: operators). */
  operatorLoad?(): Array<{ operator: string; inFlight: number; modelCalls: Record<string, number> }>;
  /** name undefined = all models; throws NOT_FOUND for an unknown model/version. */
  modelStatistics(name?: string, version?: string): ModelStatistics[];
  /**
   * What online clients of a model saw over the last `windowMs` (online-latency.ts), per served version;
   * throws NOT_FOUND for an unknown model/version. Optional: engines without it answer 501.
   */
  onlineLatency?(name: string, version: string | undefined, windowMs: number): OnlineLatency[];
  /**
   * Registers (or replaces) an operator from its JSON spec (OperatorSpec);
   * explicit model control mode only (else UNSUPPORTED). INVALID_ARG lists
   * every problem of the spec; ALREADY_EXISTS when a repository model has the name.
   */
  registerOperator(spec: unknown): Promise<OperatorInfo>;
  /** Removes a registered operator; NOT_FOUND when none has the name. */
  unregisterOperator(name: string): Promise<void>;
  /** Served operators: registered ones and the model repository's ensembles. */
  listOperators(): OperatorInfo[];
  /**
   * Dry run of registerOperator: every check it applies (control mode, the
   * spec's shape, its name, its steps against the models served now, calls
   * to itself), registering nothing. Never throws for a bad spec: its
   * problems come back, one message each.
   */
  validateOperator(spec: unknown): Promise<OperatorValidation>;
  /** One entry per backend instance (worker process) of every served model version, with its process usage. */
  workers(): Promise<WorkersResponse>;
}

/** POST /v2/operators/:operator/validate answers this (the admin contract's shape). */
export type { OperatorValidation };

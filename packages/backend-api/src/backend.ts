import type { OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import type { ExecuteTiming, InstanceKind, IoInfo, NativeLoadSpec, WireParameters } from "@operon/protocol/worker-wire";
import type { BackendApiVersion } from "./backend-api-version.js";

/**
 * The contract between the worker process and a backend (onnxruntime,
 * typescript; native later). One Backend object serves one model instance;
 * the worker calls execute one request at a time, never concurrently, so a
 * backend needs no locking. Versioned by BACKEND_API_VERSION
 * (backend-api-version.ts): the worker refuses a backend built for an
 * incompatible version.
 */

export type LogLevel = "debug" | "info" | "warn" | "error";
export type BackendLog = (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;

export interface BackendInitOptions {
  /** Absolute path of the model file (e.g. <repo>/<model>/<version>/model.onnx). */
  modelPath: string;
  /** The model config as Triton's JSON (snake_case keys, TYPE_* enums). */
  config: Record<string, unknown>;
  instanceName: string;
  /** Load-time parameters; they win over same-named config `parameters`. */
  parameters: Record<string, string>;
  /** The instance group kind; undefined = the backend derives it from config. */
  instanceKind?: InstanceKind;
  deviceId?: number;
  log: BackendLog;
  /** Services of the worker process (BLS, the hang guard); absent when a backend runs outside a worker (unit tests). */
  host?: BackendHost;
  /** Backend "native": the Triton backend library to load (modelPath is then the model folder). */
  native?: NativeLoadSpec;
}

export interface BackendMetadata {
  inputs: IoInfo[];
  outputs: IoInfo[];
}

export interface BackendExecuteResult {
  outputs: Tensor[];
  timing: ExecuteTiming;
}

export interface Backend {
  /** The backend API version the backend was built against (normally BACKEND_API_VERSION). */
  readonly apiVersion: BackendApiVersion;
  /** Loads the model. Throws OperonError (e.g. INVALID_ARG for a bad model, UNAVAILABLE for a missing device). */
  initialize(options: BackendInitOptions): Promise<void>;
  /** Inputs and outputs as the model declares them; valid after initialize. */
  metadata(): BackendMetadata;
  /**
   * The model config as the backend completed it at initialize (native
   * backends: TRITONBACKEND_ModelSetConfig); undefined = unchanged. Optional.
   */
  completedConfig?(): Record<string, unknown> | undefined;
  /**
   * Runs one request (or one batch the scheduler assembled). outputNames
   * undefined or empty = every output. Throws OperonError: INVALID_ARG for
   * bad inputs (naming the input), INTERNAL for backend faults.
   */
  execute(inputs: Tensor[], outputNames?: string[]): Promise<BackendExecuteResult>;
  /** Releases the model; the object is not used afterwards. */
  finalize(): Promise<void>;
}

// ---- request-level backends (TypeScript backend): batches of requests, decoupled responses, BLS ----

/** A response as a backend hands it to the worker; `{ outputs: [] }` with final = a final flag only. */
export type BackendResponse =
  | { outputs: Tensor[]; timing?: ExecuteTiming; parameters?: WireParameters }
  | { error: OperonError };

/** One request of the batch handed to RequestBackend.executeRequests. */
export interface BackendRequest {
  /** The wire request id (unique per worker channel): for logs. */
  readonly requestId: number;
  /** The client's request id; "" when it sent none. */
  readonly id: string;
  /**
   * The log ids (X-Request-Id) of the client requests behind this one (one;
   * several when the gateway batched them). Lines the backend writes while
   * its execute runs carry them already; a line written later about this
   * request (a decoupled stream) should carry them too.
   */
  readonly logIds?: readonly string[];
  /** Valid until the request's final response: they may be views into shared memory. */
  readonly inputs: Tensor[];
  /** Empty = every output. */
  readonly outputNames: string[];
  readonly parameters: WireParameters;
  /**
   * Outputs the gateway wants left in the instance's GPU memory (an
   * operator's intermediate for a KIND_GPU step on the same GPU): a backend
   * that can keeps them there and answers them with `device`; any other
   * answers bytes as usual.
   */
  readonly deviceOutputs?: readonly string[];
  /** True once the client gave up on the request (the gateway's `cancel`); the backend may stop early, it still ends the request. */
  readonly cancelled: boolean;
  /**
   * Sends a response. A non-decoupled backend calls it exactly once per
   * request, final = true; a decoupled one any number of times, the last
   * with final = true. Calling it after the final response throws.
   */
  respond(response: BackendResponse, final: boolean): void;
}

/** A BLS call: one inference on another model, routed by the gateway. */
export interface BlsCall {
  model: string;
  /** undefined = the version the model's version policy serves. */
  version?: string;
  inputs: Tensor[];
  /** undefined or empty = every output. */
  outputNames?: string[];
  parameters?: WireParameters;
}

/** The outcome of a BLS call: a failure is a value, never a rejection. */
export type BlsOutcome = { outputs: Tensor[] } | { error: OperonError };

/**
 * Guards executes against a model that never returns. A synchronous
 * endless loop blocks this process's only JS thread, so no timer here can
 * fire: the guard runs on its own thread and, past the deadline, fails the
 * armed requests with UNAVAILABLE `message` and kills the process (the
 * gateway then restarts the worker). One execute is armed at a time.
 */
export interface ExecuteGuard {
  /** Starts the clock for the requests of one execute; call the returned function once it has returned. */
  arm(requestIds: readonly number[]): () => void;
  /** Stops the guard thread; idempotent. */
  close(): void;
}

export interface ExecuteGuardOptions {
  timeoutMs: number;
  /** The error the armed requests fail with, e.g. "model 'x' execute timed out after 30000 ms". */
  message: string;
  /** Fail the requests with a final `response-error` (decoupled) rather than `error`. */
  decoupled: boolean;
}

/** What the worker process offers a backend beyond its own model. */
export interface BackendHost {
  /** Runs an inference on another model through the gateway. Never rejects. */
  infer(call: BlsCall): Promise<BlsOutcome>;
  createExecuteGuard(options: ExecuteGuardOptions): Promise<ExecuteGuard>;
  /**
   * Room for an output of byteLength bytes in the worker's shared-memory
   * half (a view; a backend writes the output there itself, and a response
   * whose tensor is exactly that view travels without a copy), or undefined
   * when there is no shared memory, the output is small, or no room is free
   * now (then use any Buffer). Space not sent in a response goes back
   * through freeOutput. Optional.
   */
  allocateOutput?(byteLength: number): Buffer | undefined;
  /** Gives back room from allocateOutput that no response carried. */
  freeOutput?(buffer: Buffer): void;
  /** Publishes the backend's custom metric families (Prometheus text, the whole set) on the gateway's metrics port. Optional. */
  publishMetrics?(text: string): void;
}

/**
 * A backend that sees requests, not tensors: the worker hands it every
 * execute waiting in its queue (up to maxBatchSize in batch-dimension sum,
 * one request when 0) and the backend answers each through its respond().
 * Once executeRequests resolves the worker takes the next requests, even
 * while decoupled ones still stream. It must not reject: failures are
 * responses. execute() (from Backend) stays usable for one non-decoupled request.
 */
export interface RequestBackend extends Backend {
  /** Valid after initialize. */
  readonly decoupled: boolean;
  /** The config's max_batch_size: 0 = no batching, one request per execute. Valid after initialize. */
  readonly maxBatchSize: number;
  executeRequests(requests: BackendRequest[]): Promise<void>;
  /** Told when the client gave up on requests it holds (their `cancelled` turned true). Optional. */
  cancelRequests?(requests: BackendRequest[]): void;
  /** Gives back GPU outputs (their `device.region`) the gateway is done with. */
  releaseDeviceOutputs?(regions: number[]): void;
}

export function isRequestBackend(backend: Backend): backend is RequestBackend {
  return typeof (backend as Partial<RequestBackend>).executeRequests === "function";
}

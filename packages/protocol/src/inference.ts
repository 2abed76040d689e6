import type { Parameters, Tensor } from "./tensor.js";

/**
 * One inference request as the engine sees it, whatever frontend it came
 * from. Frontends decode their wire format into this and nothing else.
 */
export interface InferRequest {
  modelName: string;
  /** Explicit version ("" or undefined = the server picks, Triton-style: latest ready). */
  modelVersion?: string;
  id?: string;
  /**
   * The id this request's log lines carry, set by the frontend that took it
   * (the client's X-Request-Id / x-request-id, or one it generated); it
   * travels to the instance that runs the request, so the backend's lines
   * carry it too. Never from the request body.
   */
  logId?: string;
  parameters: Parameters;
  inputs: InferInput[];
  /** Requested outputs; undefined or empty = all outputs. */
  outputs?: RequestedOutput[];
  /** Aborted when the client goes away (HTTP close, gRPC cancel). */
  signal?: CancelSignal;
  /** The caller's tenant (from its API key's grant) for traffic shares; undefined = the anonymous tenant. Never from the wire. */
  tenantId?: string;
  /**
   * Set by a frontend's decoder when an input or a requested output names a
   * shared-memory region (shared_memory_region): the frontend resolves those
   * before the engine sees the request. Absent on every other request, so
   * the feature costs one branch when unused.
   */
  sharedMemory?: true;
  /**
   * "perf": a tagged perf request from a caller allowed to tag (perf-traffic.ts), counted apart;
   * "batch": a batch job's request (its key grant's `batchJob`), left out of online_latency. Never from the wire.
   */
  trafficClass?: "perf" | "batch";
  /**
   * Set by a frontend for a traced request only (the trace extension): the
   * engine calls it once the request has run, with where its time went, so
   * the trace gets queue / compute / operator step spans. Absent on every
   * other request: one branch when tracing is off. Never from the wire.
   */
  onTimings?: (timings: RequestTimings) => void;
  /**
   * Set by the operator planner only (dag-executor.ts), never from the wire:
   * outputs the step's instance should keep in its GPU memory for the next
   * KIND_GPU step on the same GPU; set (maybe empty) on every step request
   * that reads or writes a tensor on a GPU. Such a request bypasses the
   * response cache (its inputs' bytes are not in the gateway).
   */
  deviceOutputs?: string[];
}

/** Where a request's time went in the engine: the durations its statistics record, and an operator's steps. */
export interface RequestTimings {
  queueNs: number;
  computeInputNs: number;
  computeInferNs: number;
  computeOutputNs: number;
  /** An operator's steps that ran, on the performance.now() clock (ms). */
  steps?: ReadonlyArray<{ step: string; model?: string; status: string; startedAtMs: number; endedAtMs: number }>;
}

/**
 * What the request path reads of a cancellation: the part of AbortSignal it
 * uses, so an AbortSignal fits and so does the gateway's Cancellation
 * (engine/cancellation.ts), which the frontends create per request because
 * an AbortController costs microseconds there.
 */
export interface CancelSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

export interface InferInput extends Tensor {
  parameters?: Parameters;
}

export interface RequestedOutput {
  name: string;
  parameters?: Parameters;
}

export interface InferResponse {
  modelName: string;
  modelVersion: string;
  id?: string;
  parameters?: Parameters;
  outputs: Tensor[];
}

/** Tensor metadata as served by model metadata (-1 = variable dimension). */
export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

export interface ServerMetadata {
  name: string;
  version: string;
  extensions: string[];
}

// The shapes the control plane reads back (repository index, statistics) are written once, as zod schemas in
// admin.ts; their types are offered here too, beside the rest of the inference API.
export type {
  BatchStatistics,
  DurationStat,
  InferStatistics,
  ModelState,
  ModelStatistics,
  PerfTrafficCounts,
  RepositoryIndexEntry,
} from "./admin.js";

/** Files uploaded with a load request: key "<version>/<path>" relative to the model dir. */
export interface ModelLoadOptions {
  /** ModelConfig JSON string (the `config` parameter), overrides config.pbtxt. */
  config?: string;
  files?: Map<string, Buffer>;
}

export interface ModelUnloadOptions {
  unloadDependents?: boolean;
}

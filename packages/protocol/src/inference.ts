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
  /** "perf": a tagged perf request from a caller allowed to tag (perf-traffic.ts), counted apart. Never from the wire. */
  trafficClass?: "perf";
  /**
   * Set by a frontend for a traced request only (the trace extension): the
   * engine calls it once the request has run, with where its time went, so
   * the trace gets queue / compute / operator step spans. Absent on every
   * other request: one branch when tracing is off. Never from the wire.
   */
  onTimings?: (timings: RequestTimings) => void;
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

/** Triton model states as shown by the repository index. */
export type ModelState = "UNKNOWN" | "READY" | "UNAVAILABLE" | "LOADING" | "UNLOADING";

export interface RepositoryIndexEntry {
  name: string;
  version?: string;
  state?: ModelState;
  reason?: string;
  /**
   * Operon's addition (HTTP only; gRPC's RepositoryIndex has no field for
   * it): load warnings of a READY version, e.g. config fields Operon does
   * not implement. Absent when there are none.
   */
  warnings?: string[];
}

/** Triton's statistics JSON (extension_statistics.md). Durations in ns. */
export interface DurationStat {
  count: number;
  ns: number;
}

export interface InferStatistics {
  success: DurationStat;
  fail: DurationStat;
  queue: DurationStat;
  compute_input: DurationStat;
  compute_infer: DurationStat;
  compute_output: DurationStat;
  cache_hit: DurationStat;
  cache_miss: DurationStat;
}

export interface BatchStatistics {
  batch_size: number;
  compute_input: DurationStat;
  compute_infer: DurationStat;
  compute_output: DurationStat;
}

/** Tagged perf requests of a model version (perf-traffic.ts): counts and summed request durations. */
export interface PerfTrafficCounts {
  success_count: number;
  success_ns: number;
  fail_count: number;
  fail_ns: number;
  inference_count: number;
}

export interface ModelStatistics {
  name: string;
  version: string;
  /** ms since epoch of the last inference, 0 if none. */
  last_inference: number;
  inference_count: number;
  execution_count: number;
  inference_stats: InferStatistics;
  response_stats: Record<string, unknown>;
  batch_stats: BatchStatistics[];
  memory_usage: Array<{ type: string; id: number; byte_size: number }>;
  /** Operon's extension (HTTP only): the requests above that were tagged perf traffic (perf-traffic.ts). */
  operon_perf_traffic?: PerfTrafficCounts;
}

/** Files uploaded with a load request: key "<version>/<path>" relative to the model dir. */
export interface ModelLoadOptions {
  /** ModelConfig JSON string (the `config` parameter), overrides config.pbtxt. */
  config?: string;
  files?: Map<string, Buffer>;
}

export interface ModelUnloadOptions {
  unloadDependents?: boolean;
}

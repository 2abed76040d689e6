import type { LatencySummary } from "./latency-stats.js";
import type { LoadRange } from "./load-range.js";

/**
 * The result of a perf run: plain JSON (no Dates, Maps or bigints), so it
 * can be printed, written to a file and stored as is. It is versioned:
 * readers check `schemaVersion` through parsePerfReport, and any change
 * that is not a pure addition of optional fields bumps it.
 *
 * Units live in the names: Us = microseconds, Ms = milliseconds, PerSec.
 * Latencies and server times are rounded to 0.1 µs, throughputs to 0.01.
 */
export const PERF_REPORT_SCHEMA_VERSION = 1;

export type PerfMode = "concurrency" | "request-rate";
export type RequestDistribution = "constant" | "poisson";

export interface PerfReport {
  schemaVersion: typeof PERF_REPORT_SCHEMA_VERSION;
  model: string;
  /** The version measured: the one asked for, else the highest the model metadata lists (the server's default pick). */
  version: string;
  protocol: "http" | "grpc";
  mode: PerfMode;
  /** ISO 8601 timestamps of the start and end of the run. */
  startedAt: string;
  finishedAt: string;
  config: PerfReportConfig;
  /** One per concurrency or request rate of the sweep, in order. */
  steps: PerfStep[];
}

export interface PerfReportConfig {
  /** The server address as given (host:port). */
  url: string;
  batchSize: number;
  /** The model's max_batch_size (0 = no batch dimension). */
  maxBatchSize: number;
  inputData: "zero" | "random" | "file";
  /** Set when inputData is "file". */
  inputDataFile?: string;
  /** --shape values: dims without the batch dimension. */
  shapes: Record<string, number[]>;
  /** HTTP only: tensors sent with the binary_tensor_data extension rather than as JSON. */
  binaryData: boolean;
  measurementIntervalMs: number;
  stabilityPercentage: number;
  maxTrials: number;
  /** Set in request-count mode: each step sent exactly this many requests, measured as one window. */
  requestCount?: number;
  /** Every request carried this `priority` parameter (the model's priority level it was queued at; 1 = highest). */
  priority?: number;
  /** --percentile: stability was judged on this latency percentile (each step reports it as percentileLatencyUs). */
  percentile?: number;
  /** --shared-memory system: tensors went through registered POSIX shared memory, not the request bodies. */
  sharedMemory?: "system";
  /** With sharedMemory: bytes reserved per output. */
  outputSharedMemorySize?: number;
  /** The model's config has `response_cache { enable: true }` (perf_analyzer then adds the cache columns to its CSV). */
  responseCache?: boolean;
  /** --streaming: requests went over one gRPC ModelStreamInfer call; latency is the time to the final response. */
  streaming?: boolean;
  /** A sequence model: requests were sent as sequences of this many (--sequence-length), ids from sequenceIdStart. */
  sequenceLength?: number;
  /** The first correlation id of the run (decimal: ids are uint64). */
  sequenceIdStart?: string;
  /** The sweep: exactly one of the two ranges is set, matching `mode`. */
  concurrencyRange?: LoadRange;
  requestRateRange?: LoadRange;
  /** request-rate mode only. */
  requestDistribution?: RequestDistribution;
  /** The request inputs (of the first request when an input file holds several). */
  inputs: Array<{ name: string; datatype: string; shape: number[] }>;
}

export type PerfStep = PerfStepResult &
  ({ concurrency: number; requestRate?: undefined } | { requestRate: number; concurrency?: undefined });

export interface PerfStepResult {
  /** Inferences per second: successful requests × batch size / measured time. */
  throughputInferPerSec: number;
  throughputRequestsPerSec: number;
  /** Client-side latency of the successful requests, send to response end. */
  latencyUs: LatencySummary;
  /** The latency at config.percentile (set when the run had --percentile). */
  percentileLatencyUs?: number;
  /** Successful requests in the merged windows. */
  requests: number;
  /** Failed requests in the merged windows. */
  errors: number;
  /** Up to 5 distinct error messages seen during the step (merged windows or not). */
  errorSamples: string[];
  /** Server-side averages over the merged windows; absent when the server offers no statistics. */
  server?: PerfServerStats;
  /** True when the last 3 windows agreed within stabilityPercentage (always true in request-count mode). */
  stable: boolean;
  /** Every measurement window of the step, in order; the step's figures come from those with merged = true. */
  windows: PerfWindow[];
}

export interface PerfServerStats {
  /** Successful requests the server counted (comparable to `requests`). */
  requests: number;
  /** Per-request averages. */
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
  /** Executions per batch size ("1": 120, "4": 30), from batch_stats. */
  batchSizes: Record<string, number>;
  /**
   * The response cache (set when the server counted hits or misses): how
   * many requests were answered from it and how many looked it up in vain,
   * and the average time of each (µs, per hit and per miss).
   */
  cacheHits?: number;
  cacheHitUs?: number;
  cacheMisses?: number;
  cacheMissUs?: number;
}

export interface PerfWindow {
  durationMs: number;
  requests: number;
  errors: number;
  throughputInferPerSec: number;
  avgLatencyUs: number;
  merged: boolean;
}

/** The load of a step as a label: "Concurrency: 4" or "Request Rate: 100". */
export function stepLoadLabel(step: PerfStep): string {
  return step.concurrency !== undefined ? `Concurrency: ${step.concurrency}` : `Request Rate: ${step.requestRate}`;
}

/**
 * Checks that parsed JSON is a PerfReport this code understands and
 * returns it typed; throws an Error naming the first problem. For stored
 * reports: a different schemaVersion is refused rather than misread.
 */
export function parsePerfReport(value: unknown): PerfReport {
  const report = object(value, "report");
  if (report["schemaVersion"] !== PERF_REPORT_SCHEMA_VERSION) {
    throw new Error(
      `unsupported perf report schemaVersion ${JSON.stringify(report["schemaVersion"])} (this reader knows ${PERF_REPORT_SCHEMA_VERSION})`,
    );
  }
  for (const key of ["model", "version", "startedAt", "finishedAt"]) string(report[key], key);
  oneOf(report["protocol"], ["http", "grpc"], "protocol");
  oneOf(report["mode"], ["concurrency", "request-rate"], "mode");
  const config = object(report["config"], "config");
  for (const key of ["batchSize", "maxBatchSize", "measurementIntervalMs", "stabilityPercentage", "maxTrials"])
    number(config[key], `config.${key}`);
  oneOf(config["inputData"], ["zero", "random", "file"], "config.inputData");
  if (!Array.isArray(config["inputs"])) throw new Error("config.inputs must be an array");
  if (!Array.isArray(report["steps"])) throw new Error("steps must be an array");
  report["steps"].forEach((item, index) => {
    const where = `steps[${index}]`;
    const step = object(item, where);
    const load = report["mode"] === "concurrency" ? "concurrency" : "requestRate";
    number(step[load], `${where}.${load}`);
    for (const key of ["throughputInferPerSec", "throughputRequestsPerSec", "requests", "errors"])
      number(step[key], `${where}.${key}`);
    const latency = object(step["latencyUs"], `${where}.latencyUs`);
    for (const key of ["p50", "p90", "p95", "p99", "avg", "min", "max"])
      number(latency[key], `${where}.latencyUs.${key}`);
    if (typeof step["stable"] !== "boolean") throw new Error(`${where}.stable must be a boolean`);
    if (!Array.isArray(step["errorSamples"]) || !Array.isArray(step["windows"])) {
      throw new Error(`${where}.errorSamples and ${where}.windows must be arrays`);
    }
    if (step["server"] !== undefined) {
      const server = object(step["server"], `${where}.server`);
      for (const key of ["requests", "queueUs", "computeInputUs", "computeInferUs", "computeOutputUs"])
        number(server[key], `${where}.server.${key}`);
      object(server["batchSizes"], `${where}.server.batchSizes`);
    }
  });
  return value as PerfReport;
}

function object(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error(`${where} must be an object`);
  return value as Record<string, unknown>;
}

function string(value: unknown, where: string): void {
  if (typeof value !== "string") throw new Error(`${where} must be a string`);
}

function number(value: unknown, where: string): void {
  if (typeof value !== "number" || !Number.isFinite(value)) throw new Error(`${where} must be a finite number`);
}

function oneOf(value: unknown, allowed: readonly string[], where: string): void {
  if (typeof value !== "string" || !allowed.includes(value))
    throw new Error(`${where} must be one of ${allowed.join(", ")}`);
}

/**
 * Online latency (Operon extension, issue 24): what online clients of a
 * model version saw over the last `window_ms`, i.e. its requests that were
 * neither a batch job's (the key grant's `batchJob`) nor tagged perf traffic
 * (perf-traffic.ts). A batch job reads it to keep online p99 within its
 * budget: GET /v2/models/<name>[/versions/<v>]/online_latency?window_ms=N
 * answers `{ online_latency: OnlineLatency[] }`, one entry per served version.
 */
export interface OnlineLatency {
  model_name: string;
  model_version: string;
  window_ms: number;
  /** Online requests that succeeded within the window. */
  count: number;
  /** null when `count` is 0. */
  p50_us: number | null;
  p99_us: number | null;
}

/** Windows the gateway accepts (ms); a longer one would outlast the samples it keeps under load. */
export const MIN_ONLINE_WINDOW_MS = 100;
export const MAX_ONLINE_WINDOW_MS = 60_000;
export const DEFAULT_ONLINE_WINDOW_MS = 1_000;

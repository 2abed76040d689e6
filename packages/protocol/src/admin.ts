/**
 * Operon's admin extension of the gateway's HTTP API (beyond KServe v2 and
 * Triton's extensions), shared by the gateway that serves it and the
 * control plane that reads it.
 *
 * GET /v2/operon/workers → WorkersResponse: one entry per model instance
 * (a worker process), for the console's workers page and the usage sampler.
 */
export interface WorkerInstanceInfo {
  model: string;
  version: string;
  /** Triton's instance name, e.g. `add_sub_0_0`. */
  instance: string;
  /** The backend hosting the model (onnxruntime, typescript, ...). */
  backend: string;
  kind: "CPU" | "GPU";
  /** GPU index for KIND_GPU instances; null on CPU. */
  device: number | null;
  /**
   * "thread": a thread of the gateway process (pid is the gateway's, tid the
   * thread's; cpuSeconds is the thread's own, its memory is the gateway's, so
   * rssBytes is null); "process": a worker process of its own.
   */
  isolation: "thread" | "process";
  /** Linux thread id of a thread instance; absent for processes and elsewhere. */
  tid?: number;
  /** null while the worker is (re)starting. */
  pid: number | null;
  state: "READY" | "RESTARTING" | "FAILED";
  inFlight: number;
  /** Restarts after crashes since the model version was loaded. */
  restarts: number;
  /** ISO time the current worker process started. */
  startedAt: string | null;
  /** CPU time (user + system) the current worker process has used, seconds; null when unknown. */
  cpuSeconds: number | null;
  /** Resident memory of the worker process, bytes; null when unknown. */
  rssBytes: number | null;
}

export interface WorkersResponse {
  workers: WorkerInstanceInfo[];
  /** CPU cores of the gateway's host, for turning CPU seconds into utilization. */
  hostCpuCores: number;
  /** The gateway process's own CPU seconds and resident memory. */
  gateway: { pid: number; cpuSeconds: number; rssBytes: number };
}

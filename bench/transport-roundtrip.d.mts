/** Types of transport-roundtrip.mjs, for TypeScript callers (e.g. whoever wires it into `npm run bench`). */
export type TransportName = "shm" | "socket" | "worker_threads" | "memcpy";

export interface TransportResult {
  transport: TransportName;
  /** false: this transport could not run here (see error); the figures are NaN. */
  ok: boolean;
  error?: string;
  samples: number;
  medianUs: number;
  p10Us: number;
  p90Us: number;
  minUs: number;
  meanUs: number;
}

export interface TransportReport {
  byteLength: number;
  iterations: number;
  warmup: number;
  environment: {
    node: string;
    cpus: number;
    cpuModel: string;
    sharedMemory: "native" | "fallback";
    sharedMemoryReason: string | null;
  };
  results: TransportResult[];
}

export interface MeasureOptions {
  /** Default 602112 (1x3x224x224 FP32). */
  byteLength?: number;
  /** Timed round trips per transport; default 300. */
  iterations?: number;
  /** Untimed round trips first; default 1000. */
  warmup?: number;
  /** Default all four, in this order. */
  transports?: TransportName[];
  /** Default packages/worker/dist/main.js. */
  workerEntry?: string;
  /** Shared-memory segment size for "shm"; default the transport's (64 MiB). */
  sharedMemoryBytes?: number;
}

export declare const TRANSPORTS: readonly ["shm", "socket", "worker_threads", "memcpy"];
export declare function measureTransport(options?: MeasureOptions): Promise<TransportReport>;
export declare function formatReport(report: TransportReport): string;

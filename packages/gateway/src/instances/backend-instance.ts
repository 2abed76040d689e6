import type { EventEmitter } from "node:events";
import type { Tensor } from "@operon/protocol/tensor";
import type { IoInfo } from "@operon/protocol/worker-wire";
import type {
  BlsRequestHandler,
  ExecuteRequestOptions,
  StreamRequestOptions,
  StreamResponse,
  WorkerExecuteResult,
  WorkerLoadSpec,
} from "./worker-process.js";

/**
 * Where a backend instance runs (an instance-level choice, see README
 * "Execution modes"):
 * - "thread": a worker_thread of the gateway process. Only trusted native
 *   backends (onnxruntime, echo). Tensors move with transferred
 *   ArrayBuffers, no syscall beyond the thread wake-up, no serialization.
 *   A native crash takes the gateway down with it (as in Triton); a thrown
 *   error or the thread's exit fails its in-flight requests with
 *   UNAVAILABLE and the thread is restarted with backoff.
 * - "process": a worker process with shared memory and a control socket.
 *   Always for user code (the TypeScript backend). A crash or kill fails
 *   only that instance's in-flight requests (UNAVAILABLE) and it restarts.
 */
export type InstanceIsolation = "thread" | "process";

/** The backends that may run on a gateway thread; every other backend runs in a process. */
export const THREAD_CAPABLE_BACKENDS: ReadonlySet<string> = new Set(["onnxruntime", "echo"]);

/**
 * One running backend instance, in a thread or a process: what the model
 * instance pool needs of it. Emits "exit" once with
 * { code, signal, expected }.
 */
export interface BackendInstance extends EventEmitter {
  readonly isolation: InstanceIsolation;
  /** The process the instance runs in (the gateway's own for threads). */
  readonly pid: number;
  /** Epoch milliseconds. */
  readonly startedAt: number;
  readonly instanceName: string;
  /** Requests sent and not yet answered. */
  readonly inFlight: number;
  onBlsRequest: BlsRequestHandler | undefined;
  load(spec: WorkerLoadSpec): Promise<{ inputs: IoInfo[]; outputs: IoInfo[] }>;
  execute(inputs: Tensor[], outputNames?: string[], options?: ExecuteRequestOptions): Promise<WorkerExecuteResult>;
  executeStream(
    inputs: Tensor[],
    outputNames: string[] | undefined,
    onResponse: (response: StreamResponse) => void,
    options?: StreamRequestOptions,
  ): Promise<void>;
  /** Finishes what it has, then ends; forced after timeoutMs. Idempotent. */
  stop(timeoutMs?: number): Promise<void>;
  /** Ends now; outstanding requests fail UNAVAILABLE; the exit counts as expected. */
  kill(signal?: NodeJS.Signals): void;
}

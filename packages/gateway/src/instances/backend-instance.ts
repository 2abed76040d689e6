import type { EventEmitter } from "node:events";
import type { Tensor } from "@operon/protocol/tensor";
import type { IoInfo } from "@operon/protocol/worker-wire";
import type { OperonError } from "@operon/protocol/errors";
import type { InstanceLoadSpec } from "@operon/protocol/instance-load";
import type { ExecuteTiming, WireParameters } from "@operon/protocol/worker-wire";
import type { CancelSignal } from "@operon/protocol/inference";

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
 * - "inline": the gateway's event loop itself, asked for per model
 *   (`operon_isolation: "inline"`), for models that run in microseconds:
 *   no thread hop at all, but nothing else runs while a batch does
 *   (InlineInstance). Trusted native backends only, never a server default.
 */
export type InstanceIsolation = "thread" | "process" | "inline";

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
  /** Linux thread id of a thread instance once loaded; undefined for processes. */
  readonly tid?: number | undefined;
  /** Requests sent and not yet answered. */
  readonly inFlight: number;
  /** Inline instances: seconds their executions held the gateway's event loop (their CPU time, within the gateway's). */
  readonly executeSeconds?: number | undefined;
  onBlsRequest: BlsRequestHandler | undefined;
  /**
   * Runs fn with the instance's writes held back and sent together after it
   * (one socket write for a batch of requests, so the worker reads them as
   * one batch). Optional: instances without a stream just run fn.
   */
  corked?<T>(fn: () => T): T;
  /** Native backends' custom metric families as this instance's process last published them (Prometheus text); absent or "" = none. */
  readonly customMetricsText?: string;
  load(spec: WorkerLoadSpec): Promise<WorkerLoadResult>;
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

/** A BLS call a model made from inside the worker: one inference on another model. */
export interface BlsRequest {
  model: string;
  /** undefined = the version the model's version policy serves. */
  version?: string;
  /** The caller's Buffers (copied out of shared memory). */
  inputs: Tensor[];
  /** undefined = every output. */
  outputNames?: string[];
  parameters?: Record<string, unknown>;
}

/** Runs a BLS call; a rejection (OperonError kind + message) is what the model sees as its error. */
export type BlsRequestHandler = (request: BlsRequest) => Promise<{ outputs: Tensor[] }>;

/** One response of a streamed (decoupled) request; a final flag alone arrives as { outputs: [], final: true }. */
export type StreamResponse =
  | { outputs: Tensor[]; final: boolean; parameters?: WireParameters }
  | { error: OperonError; final: boolean };

/** Per-request data some backends show the model (the TypeScript backend does). */
export interface ExecuteRequestOptions {
  /** The client's request id. */
  id?: string;
  /** The log ids (X-Request-Id) of the client requests this execute serves: the instance's log lines carry them. */
  logIds?: string[];
  /** The request's parameters (JSON-safe values). */
  parameters?: WireParameters;
  /** The client's cancellation: once it fires, the backend is told (worker processes: a `cancel` frame). */
  signal?: CancelSignal;
  /** Outputs to keep in the instance's GPU memory (an operator's planned intermediates; worker processes only). */
  deviceOutputs?: string[];
}

export interface StreamRequestOptions extends ExecuteRequestOptions {
  /**
   * Called at most once, when the worker says the model's execute returned
   * for this request (decoupled models on request-level backends; its
   * responses may still flow). Not called when the final response (or the
   * worker's exit) comes first, nor for backends that never say so.
   */
  onExecuted?: () => void;
}

/** What loading an instance takes (the fields of @operon/protocol/instance-load, less the instance's own name). */
export type WorkerLoadSpec = InstanceLoadSpec;

/** What a loaded instance reports: its inputs and outputs, and the config when its backend completed it. */
export interface WorkerLoadResult {
  inputs: IoInfo[];
  outputs: IoInfo[];
  config?: Record<string, unknown>;
}

export interface WorkerExitInfo {
  code: number | null;
  signal: string | null;
  /** True when stop() or kill() caused the exit. */
  expected: boolean;
}

export interface WorkerExecuteResult {
  outputs: Tensor[];
  timing: ExecuteTiming;
  /** Response parameters the backend set; absent = none. */
  parameters?: WireParameters;
}

/**
 * executeStream for instances that are never decoupled (thread and inline): the one execution's
 * result as the one response, final; its failure as a final error response.
 */
export function oneResponseStream(
  execution: Promise<WorkerExecuteResult>,
  onResponse: (response: StreamResponse) => void,
): Promise<void> {
  return execution.then(
    (result) => onResponse({ outputs: result.outputs, final: true }),
    (error: unknown) => onResponse({ error: error as OperonError, final: true }),
  );
}

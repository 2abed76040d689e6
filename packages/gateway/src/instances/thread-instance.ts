import { EventEmitter } from "node:events";
import { Worker } from "node:worker_threads";
import { OperonError } from "@operon/protocol/errors";
import { instanceLoadOf } from "@operon/protocol/instance-load";
import { logIdFields } from "@operon/protocol/logger";
import type { Tensor } from "@operon/protocol/tensor";
import {
  type FromThreadMessage,
  THREAD_WIRE_VERSION,
  TensorNames,
  type ToThreadMessage,
  packTensors,
} from "@operon/protocol/thread-wire";
import type { IoInfo } from "@operon/protocol/worker-wire";
import { type BackendInstance, oneResponseStream } from "./backend-instance.js";
import type {
  BlsRequestHandler,
  ExecuteRequestOptions,
  StreamRequestOptions,
  StreamResponse,
  WorkerExecuteResult,
  WorkerExitInfo,
  WorkerLoadSpec,
} from "./worker-process.js";

export interface ThreadInstanceOptions {
  /** Path of the thread entry (packages/worker/dist/thread-main.js). */
  entry: string;
  instanceName: string;
  /** Receives the thread's log records. */
  onLog?: (level: "debug" | "info" | "warn" | "error", message: string, fields: Record<string, unknown>) => void;
}

interface Pending {
  resolve(value: WorkerExecuteResult): void;
  reject(error: OperonError): void;
  /** The log ids of the requests this execute serves (ExecuteRequestOptions.logIds). */
  logIds: string[] | undefined;
}

/**
 * A backend instance on a worker_thread of the gateway process (see
 * InstanceIsolation "thread"). The thread runs @operon/worker's
 * thread-main; the contract is @operon/protocol/thread-wire. Requests are
 * answered in the order sent.
 */
export class ThreadInstance extends EventEmitter implements BackendInstance {
  readonly isolation = "thread" as const;
  readonly pid = process.pid;
  readonly startedAt = Date.now();
  readonly instanceName: string;
  onBlsRequest: BlsRequestHandler | undefined;
  /** The thread's Linux tid once loaded (its CPU time: /proc/<pid>/task/<tid>/stat). */
  tid: number | undefined;
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private loading:
    | { resolve(io: { inputs: IoInfo[]; outputs: IoInfo[] }): void; reject(error: OperonError): void }
    | undefined;
  private nextRequestId = 1;
  /** The instance's declared inputs and outputs, by position: the name tables of the wire's TensorLayouts. */
  private inputNames = new TensorNames([]);
  private outputNames = new TensorNames([]);
  private expectedExit = false;
  private exited = false;
  private stopping: Promise<void> | undefined;
  private readonly exitPromise: Promise<void>;

  private constructor(private readonly options: ThreadInstanceOptions) {
    super();
    this.instanceName = options.instanceName;
    this.worker = new Worker(options.entry, {
      workerData: { instanceName: options.instanceName },
      stdout: false,
      stderr: false,
    });
    this.worker.on("message", (message: FromThreadMessage) => this.onMessage(message));
    this.worker.on("error", (error) =>
      this.onLog("error", `backend thread failed: ${error.message}`, { stack: error.stack }),
    );
    this.exitPromise = new Promise((resolve) => {
      this.worker.once("exit", (code) => {
        this.onExit(code);
        resolve();
      });
    });
  }

  static start(options: ThreadInstanceOptions): ThreadInstance {
    return new ThreadInstance(options);
  }

  get inFlight(): number {
    return this.pending.size + (this.loading !== undefined ? 1 : 0);
  }

  load(spec: WorkerLoadSpec): Promise<{ inputs: IoInfo[]; outputs: IoInfo[] }> {
    if (this.exited) return Promise.reject(this.unavailable());
    return new Promise((resolve, reject) => {
      this.loading = { resolve, reject };
      this.send({
        type: "load",
        wireVersion: THREAD_WIRE_VERSION,
        ...instanceLoadOf(spec, this.instanceName),
      });
    });
  }

  execute(inputs: Tensor[], outputNames?: string[], options?: ExecuteRequestOptions): Promise<WorkerExecuteResult> {
    if (this.exited || this.stopping !== undefined) return Promise.reject(this.unavailable());
    const requestId = this.nextRequestId++;
    const packed = packTensors(inputs);
    const described = this.inputNames.layoutOf(packed.tensors) ?? packed.tensors;
    const selected =
      outputNames !== undefined && outputNames.length > 0
        ? (this.outputNames.indexesOf(outputNames) ?? outputNames)
        : undefined;
    return new Promise<WorkerExecuteResult>((resolve, reject) => {
      this.pending.set(requestId, { resolve, reject, logIds: options?.logIds });
      this.send(
        {
          type: "execute",
          requestId,
          buffer: packed.buffer,
          inputs: described,
          ...(selected !== undefined ? { outputNames: selected } : {}),
        },
        [packed.buffer],
      );
    });
  }

  /** Thread backends are never decoupled: the one response, final. */
  executeStream(
    inputs: Tensor[],
    outputNames: string[] | undefined,
    onResponse: (response: StreamResponse) => void,
    options?: StreamRequestOptions,
  ): Promise<void> {
    return oneResponseStream(this.execute(inputs, outputNames, options), onResponse);
  }

  stop(timeoutMs = 5000): Promise<void> {
    if (this.stopping !== undefined) return this.stopping;
    this.expectedExit = true;
    this.stopping = (async () => {
      if (this.exited) return;
      this.send({ type: "stop" });
      const timer = setTimeout(() => void this.worker.terminate(), timeoutMs);
      try {
        await this.exitPromise;
      } finally {
        clearTimeout(timer);
      }
    })();
    return this.stopping;
  }

  kill(): void {
    if (this.exited) return;
    this.expectedExit = true;
    void this.worker.terminate();
  }

  private send(message: ToThreadMessage, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(message, transfer);
  }

  private onMessage(message: FromThreadMessage): void {
    switch (message.type) {
      case "result": {
        const pending = this.pending.get(message.requestId);
        if (pending === undefined) return;
        this.pending.delete(message.requestId);
        const [computeInputNs, computeInferNs, computeOutputNs] = message.timing;
        pending.resolve({
          outputs: this.outputNames.unpack(message.buffer, message.outputs),
          timing: { computeInputNs, computeInferNs, computeOutputNs },
        });
        return;
      }
      case "error": {
        const error = new OperonError(message.kind, message.message);
        if (message.requestId === 0) {
          const loading = this.loading;
          this.loading = undefined;
          loading?.reject(error);
          return;
        }
        const pending = this.pending.get(message.requestId);
        this.pending.delete(message.requestId);
        pending?.reject(error);
        return;
      }
      case "loaded": {
        this.tid = message.tid;
        const loading = this.loading;
        this.loading = undefined;
        this.inputNames = new TensorNames(message.inputs.map((io) => io.name));
        this.outputNames = new TensorNames(message.outputs.map((io) => io.name));
        loading?.resolve({ inputs: message.inputs, outputs: message.outputs });
        return;
      }
      case "log":
        this.onLog(message.level, message.message, message.fields ?? {});
        return;
    }
  }

  private onLog(level: "debug" | "info" | "warn" | "error", message: string, fields: Record<string, unknown>): void {
    try {
      // The thread runs one execute at a time, in the order sent: a line it writes while one is pending is the
      // first pending execute's, so it carries that execute's request ids.
      const current = this.pending.values().next().value?.logIds;
      this.options.onLog?.(level, message, current !== undefined ? { ...logIdFields(current), ...fields } : fields);
    } catch {
      // A failing log sink must not take the instance down.
    }
  }

  private onExit(code: number): void {
    this.exited = true;
    const error = this.unavailable();
    const loading = this.loading;
    this.loading = undefined;
    loading?.reject(error);
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
    const info: WorkerExitInfo = { code, signal: null, expected: this.expectedExit };
    this.emit("exit", info);
  }

  private unavailable(): OperonError {
    return new OperonError("UNAVAILABLE", `backend instance '${this.instanceName}' (thread) is not running`);
  }
}

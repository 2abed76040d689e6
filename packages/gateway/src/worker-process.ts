import { type ChildProcess, spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import type net from "node:net";
import { createInterface } from "node:readline";
import { OperonError, asOperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import {
  type DecodedFrame,
  type ExecuteTiming,
  FrameDecoder,
  type InstanceKind,
  type IoInfo,
  WORKER_WIRE_VERSION,
  type WorkerRequestMessage,
  writeFrame,
} from "@operon/protocol/worker-wire";

export interface WorkerSpawnOptions {
  /** Path of the worker entry (packages/worker/dist/main.js). */
  entry: string;
  instanceName: string;
  /** Environment of the worker; default process.env. OPERON_WORKER_INSTANCE is added. */
  env?: NodeJS.ProcessEnv;
  /** Receives each stderr line of the worker (JSON log lines, or native libraries' text). Default: forward to process.stderr. */
  onLog?: (line: string) => void;
  /** How long the worker may take to open its channel; default 30 s. */
  startTimeoutMs?: number;
}

export interface WorkerLoadSpec {
  backend: string;
  modelPath: string;
  config: Record<string, unknown>;
  parameters?: Record<string, string>;
  /** The instance group kind; omitted = the backend derives it from config. */
  instanceKind?: InstanceKind;
  deviceId?: number;
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
}

/** Longest wait, after the process exited, for its channel to reach EOF. */
const EXIT_DRAIN_MS = 100;

interface Pending {
  kind: "load" | "execute";
  resolve(value: unknown): void;
  reject(error: OperonError): void;
}

/**
 * The gateway's handle on one backend worker process (one model instance).
 *
 * Requests are pipelined: execute() writes the request at once and the
 * worker answers in FIFO order, so callers bound concurrency themselves
 * (inFlight tells how many are outstanding). Output tensors are views into
 * the received frame; nothing is copied after the one join per frame.
 *
 * When the process exits unexpectedly, every outstanding request (and a
 * pending load) rejects at once with UNAVAILABLE, 'exit' is emitted with
 * expected=false, and every later call rejects with UNAVAILABLE. A worker is
 * never restarted here: that is the owner's decision.
 *
 * Events: 'exit' (info: WorkerExitInfo), emitted exactly once.
 */
export class WorkerProcess extends EventEmitter {
  readonly pid: number;
  readonly instanceName: string;
  private readonly child: ChildProcess;
  private readonly channel: net.Socket;
  private readonly decoder = new FrameDecoder();
  private readonly pending = new Map<number, Pending>();
  private nextRequestId = 1;
  private state: "starting" | "running" | "stopping" | "exited" = "starting";
  private expectedExit = false;
  private exitInfo: WorkerExitInfo | undefined;
  private channelClosed = false;
  private settled = false;
  private settleTimer: NodeJS.Timeout | undefined;
  private stopping: Promise<void> | undefined;
  private readonly exited: Promise<WorkerExitInfo>;
  private resolveExited!: (info: WorkerExitInfo) => void;
  private ready: { resolve(): void; reject(error: OperonError): void } | undefined;

  private constructor(
    child: ChildProcess,
    pid: number,
    instanceName: string,
    private readonly onLog: (line: string) => void,
  ) {
    super();
    this.child = child;
    this.pid = pid;
    this.instanceName = instanceName;
    this.channel = child.stdio[3] as net.Socket;
    this.exited = new Promise((resolve) => {
      this.resolveExited = resolve;
    });

    // A no-op on a Unix socket pair today; matters if the channel becomes TCP (remote workers).
    this.channel.setNoDelay?.(true);
    this.channel.on("data", (chunk: Buffer) => this.onData(chunk));
    this.channel.on("error", () => undefined); // EPIPE/ECONNRESET: the exit handler reports it.
    this.channel.on("close", () => {
      this.channelClosed = true;
      if (this.exitInfo !== undefined) this.settleExit();
      // The worker closed its channel but lives on: it cannot serve any more.
      else if (this.state === "starting" || this.state === "running") this.child.kill("SIGKILL");
    });
    this.child.on("exit", (code, signal) => this.onChildExit(code, signal));
    this.child.on("error", (error) => this.log(`worker process error: ${error.message}`));

    const stderr = child.stderr;
    if (stderr !== null) {
      createInterface({ input: stderr, crlfDelay: Infinity }).on("line", (line) => {
        try {
          this.onLog(line);
        } catch {
          // A failing log sink must not take the worker handle down.
        }
      });
    }
  }

  /** Starts a worker and waits until its channel is open (its `ready` frame). Throws UNAVAILABLE. */
  static async spawn(options: WorkerSpawnOptions): Promise<WorkerProcess> {
    const child = spawn(process.execPath, [options.entry], {
      stdio: ["ignore", "inherit", "pipe", "pipe"],
      env: { ...(options.env ?? process.env), OPERON_WORKER_INSTANCE: options.instanceName },
    });
    if (child.pid === undefined) {
      const error = await new Promise<Error>((resolve) => child.once("error", resolve));
      throw new OperonError("UNAVAILABLE", `cannot start worker for instance '${options.instanceName}': ${error.message}`, { cause: error });
    }
    const onLog = options.onLog ?? ((line: string) => void process.stderr.write(`${line}\n`));
    const worker = new WorkerProcess(child, child.pid, options.instanceName, onLog);
    await worker.waitReady(options.startTimeoutMs ?? 30_000);
    return worker;
  }

  /** Requests sent and not yet answered (loads included). */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Loads the model instance; resolves with the backend's view of inputs and outputs. */
  load(spec: WorkerLoadSpec): Promise<{ inputs: IoInfo[]; outputs: IoInfo[] }> {
    return this.request("load", {
      type: "load",
      requestId: 0,
      backend: spec.backend,
      modelPath: spec.modelPath,
      config: spec.config,
      instanceName: this.instanceName,
      parameters: spec.parameters ?? {},
      ...(spec.instanceKind !== undefined ? { instanceKind: spec.instanceKind } : {}),
      ...(spec.deviceId !== undefined ? { deviceId: spec.deviceId } : {}),
    }) as Promise<{ inputs: IoInfo[]; outputs: IoInfo[] }>;
  }

  /** Runs one request; outputNames undefined or empty = all outputs. Rejects with the worker's OperonError. */
  execute(inputs: Tensor[], outputNames?: string[]): Promise<WorkerExecuteResult> {
    const message = { type: "execute" as const, requestId: 0, ...(outputNames !== undefined && outputNames.length > 0 ? { outputNames } : {}) };
    return this.request("execute", message, inputs) as Promise<WorkerExecuteResult>;
  }

  /**
   * Asks the worker to finish the requests it already has and exit; SIGKILL
   * after timeoutMs. Idempotent; resolves once the process has exited.
   */
  stop(timeoutMs = 5000): Promise<void> {
    if (this.stopping !== undefined) return this.stopping;
    this.stopping = (async () => {
      if (this.state === "exited") {
        await this.exited;
        return;
      }
      this.expectedExit = true;
      this.state = "stopping";
      this.send({ type: "shutdown" });
      const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
      try {
        await this.exited;
      } finally {
        clearTimeout(timer);
      }
    })();
    return this.stopping;
  }

  /** Signals the process now (default SIGKILL); outstanding requests reject with UNAVAILABLE. The exit counts as expected. */
  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    if (this.state === "exited") return;
    this.expectedExit = true;
    if (this.state !== "stopping") this.state = "stopping";
    this.child.kill(signal);
  }

  private request(kind: Pending["kind"], message: WorkerRequestMessage & { requestId: number }, tensors: Tensor[] = []): Promise<unknown> {
    if (this.state !== "running") return Promise.reject(this.unavailable());
    const requestId = this.nextRequestId++;
    message.requestId = requestId;
    return new Promise((resolve, reject) => {
      this.pending.set(requestId, { kind, resolve, reject });
      try {
        this.send(message, tensors);
      } catch (error) {
        this.pending.delete(requestId);
        reject(asOperonError(error));
      }
    });
  }

  private send(message: WorkerRequestMessage, tensors: Tensor[] = []): void {
    if (this.channel.writable) writeFrame(this.channel, message, tensors);
  }

  private waitReady(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.ready = undefined;
        this.kill("SIGKILL");
        reject(new OperonError("UNAVAILABLE", `worker for instance '${this.instanceName}' (pid ${this.pid}) did not start within ${timeoutMs} ms`));
      }, timeoutMs);
      this.ready = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
    });
  }

  private onData(chunk: Buffer): void {
    let frames: DecodedFrame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (error) {
      this.log(`corrupt frame from worker: ${asOperonError(error).message}; killing it`);
      this.child.kill("SIGKILL");
      return;
    }
    for (const frame of frames) this.onFrame(frame);
  }

  private onFrame({ header, tensors }: DecodedFrame): void {
    if (header.type === "ready") {
      if (header.wireVersion !== WORKER_WIRE_VERSION) {
        this.ready?.reject(
          new OperonError("UNAVAILABLE", `worker for instance '${this.instanceName}' speaks wire version ${header.wireVersion}, the gateway ${WORKER_WIRE_VERSION}`),
        );
        this.ready = undefined;
        this.kill("SIGKILL");
        return;
      }
      if (this.state === "starting") this.state = "running";
      this.ready?.resolve();
      this.ready = undefined;
      return;
    }
    if (header.type !== "loaded" && header.type !== "result" && header.type !== "error") return;
    const pending = this.pending.get(header.requestId);
    if (pending === undefined) {
      if (header.type === "error") this.log(`worker error: ${header.kind}: ${header.message}`);
      return;
    }
    this.pending.delete(header.requestId);
    if (header.type === "error") pending.reject(new OperonError(header.kind, header.message));
    else if (header.type === "loaded" && pending.kind === "load") pending.resolve({ inputs: header.inputs, outputs: header.outputs });
    else if (header.type === "result" && pending.kind === "execute") pending.resolve({ outputs: tensors, timing: header.timing });
    else pending.reject(new OperonError("INTERNAL", `worker answered a ${pending.kind} request with '${header.type}'`));
  }

  /**
   * The process is gone. Replies it wrote before dying may still sit unread
   * in the channel (the exit and the last bytes race in the event loop), so
   * settle once the channel has drained to EOF, which is immediate for a
   * dead process; the timer only guards against a channel that never closes.
   */
  private onChildExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.exitInfo = { code, signal, expected: this.expectedExit };
    this.state = "exited";
    if (this.channelClosed) this.settleExit();
    else this.settleTimer = setTimeout(() => this.settleExit(), EXIT_DRAIN_MS);
  }

  private settleExit(): void {
    const info = this.exitInfo;
    if (this.settled || info === undefined) return;
    this.settled = true;
    clearTimeout(this.settleTimer);
    if (this.ready !== undefined) {
      const how = info.signal !== null ? `signal ${info.signal}` : `code ${info.code}`;
      this.ready.reject(new OperonError("UNAVAILABLE", `worker for instance '${this.instanceName}' (pid ${this.pid}) exited during start-up (${how})`));
      this.ready = undefined;
    }
    const error = this.unavailable();
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const request of pending) request.reject(error);
    this.channel.destroy();
    this.resolveExited(info);
    this.emit("exit", info);
  }

  private unavailable(): OperonError {
    const who = `worker for instance '${this.instanceName}' (pid ${this.pid})`;
    const info = this.exitInfo;
    if (info === undefined) {
      return new OperonError("UNAVAILABLE", this.state === "starting" ? `${who} is not ready yet` : `${who} is stopping; request not accepted`);
    }
    const how = info.signal !== null ? `signal ${info.signal}` : `code ${info.code}`;
    return new OperonError(
      "UNAVAILABLE",
      info.expected ? `${who} was stopped (${how}); request not completed` : `${who} exited unexpectedly (${how}); request not completed`,
    );
  }

  /** Gateway-side findings about the worker go the same way as its own log lines. */
  private log(message: string): void {
    try {
      this.onLog(JSON.stringify({ time: new Date().toISOString(), level: "error", instance: this.instanceName, pid: this.pid, msg: message }));
    } catch {
      // see the stderr reader
    }
  }
}

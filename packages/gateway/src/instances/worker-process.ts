import type { ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import type net from "node:net";
import { createInterface } from "node:readline";
import { OperonError, asOperonError } from "@operon/protocol/errors";
import type { DeviceTensor, Tensor } from "@operon/protocol/tensor";
import type {
  BackendInstance,
  BlsRequest,
  BlsRequestHandler,
  ExecuteRequestOptions,
  StreamRequestOptions,
  StreamResponse,
  WorkerExecuteResult,
  WorkerExitInfo,
  WorkerLoadResult,
  WorkerLoadSpec,
} from "./backend-instance.js";
import type { CancelSignal } from "@operon/protocol/inference";
import { instanceLoadOf } from "@operon/protocol/instance-load";
import { type DecodedFrame, FrameDecoder, writeFrame } from "@operon/protocol/worker-frame-codec";
import { type ExecuteMessage, WORKER_WIRE_VERSION, type WorkerRequestMessage } from "@operon/protocol/worker-wire";
import type { SharedSegment } from "./shm-segment.js";
import { relayBlsRequest } from "./worker-bls-relay.js";
import { launchWorker, type WorkerSpawnOptions, type WorkerTransport } from "./worker-launcher.js";
import { WorkerShmTransport } from "./worker-shm-transport.js";

/** V8's fatal message when a heap limit (--max-old-space-size) is reached. */
const V8_HEAP_EXHAUSTED = /JavaScript heap out of memory|Reached heap limit/;

/** Longest wait, after the process exited, for its channel to reach EOF. */
const EXIT_DRAIN_MS = 100;

interface Pending {
  kind: "load" | "execute" | "stream";
  resolve(value: unknown): void;
  reject(error: OperonError): void;
  /** Offsets of this request's inputs in the gateway -> worker half, freed by its (final) reply. */
  inputOffsets?: number[];
  /** "stream": receives each non-final response (the final one settles the request). */
  onResponse?: (response: StreamResponse) => void;
  /** "execute" answered by a decoupled model: its responses so far. */
  responses?: StreamResponse[];
  /** "stream": told once the worker's execute returned for it (see StreamRequestOptions). */
  onExecuted?: () => void;
  /** Removes the request's cancellation listener (it sends `cancel` to the worker). */
  dropSignal?: () => void;
  /** When it was sent, epoch ms (the sandbox guard's wall-clock limit reads it). */
  sentAt: number;
}

/**
 * The gateway's handle on one backend worker process (one model instance).
 *
 * Requests are pipelined: execute() writes the request at once and the
 * worker answers in FIFO order, so callers bound concurrency themselves
 * (inFlight tells how many are outstanding). Output tensors are plain
 * Buffers the caller owns: views into the received frame (nothing copied
 * after the one join per frame), or, with the shared-memory transport, one
 * copy out of the segment.
 *
 * Shared memory (transportKind "shm"): see worker-shm-transport.ts; the
 * process is started by worker-launcher.ts and its model's BLS calls are
 * answered by worker-bls-relay.ts.
 *
 * When the process exits unexpectedly, every outstanding request (and a
 * pending load) rejects at once with UNAVAILABLE, 'exit' is emitted with
 * expected=false, and every later call rejects with UNAVAILABLE. A worker is
 * never restarted here: that is the owner's decision.
 *
 * Decoupled models answer a request with zero or more responses and one
 * final flag: executeStream() hands each to a callback. A model may also
 * call other models (BLS): the worker's bls-requests go to onBlsRequest,
 * and its answer (or error) back to the worker.
 *
 * Events: 'exit' (info: WorkerExitInfo), emitted exactly once.
 */
export class WorkerProcess extends EventEmitter implements BackendInstance {
  readonly isolation = "process" as const;
  readonly pid: number;
  /** When the process was spawned, epoch milliseconds. */
  readonly startedAt: number;
  readonly instanceName: string;
  private readonly child: ChildProcess;
  private readonly channel: net.Socket;
  private readonly decoder: FrameDecoder;
  private readonly pending = new Map<number, Pending>();
  private readonly shm: WorkerShmTransport;
  private nextRequestId = 1;
  private metricsText = "";
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
  /** Why the gateway ended the process (terminate), or what its last words said (heap exhausted); for the requests' error. */
  private endedBecause: string | undefined;
  /**
   * Serves the BLS calls of the worker's model (routing them to the named
   * model is the owner's business). Unset: every call fails UNAVAILABLE
   * "BLS is not available". Called while the worker is starting, running
   * or stopping; its answer is dropped once the worker has exited.
   */
  onBlsRequest: BlsRequestHandler | undefined;

  private constructor(
    child: ChildProcess,
    pid: number,
    instanceName: string,
    private readonly onLog: (line: string) => void,
    shm: SharedSegment | undefined,
    heapLimitMb: number | undefined,
  ) {
    super();
    this.shm = new WorkerShmTransport(shm, {
      send: (message) => this.send(message),
      isExited: () => this.state === "exited",
      log: (message, level) => this.log(message, level),
    });
    this.decoder = new FrameDecoder(shm !== undefined ? { sharedMemory: shm.toGateway } : {});
    this.child = child;
    this.pid = pid;
    this.startedAt = Date.now();
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
        // V8's last words before it aborts: name the cause in the requests' error, not only "signal SIGABRT".
        if (this.endedBecause === undefined && V8_HEAP_EXHAUSTED.test(line)) {
          this.endedBecause = `it ran out of JavaScript heap${heapLimitMb !== undefined ? ` (its limit is ${heapLimitMb} MiB)` : ""}`;
        }
        try {
          this.onLog(line);
        } catch {
          // A failing log sink must not take the worker handle down.
        }
      });
    }
  }

  /**
   * Starts a worker and waits until its channel is open (its `ready` frame).
   * Throws UNAVAILABLE, also when transport "shm" was asked for and shared
   * memory cannot be set up.
   */
  static async spawn(options: WorkerSpawnOptions): Promise<WorkerProcess> {
    const { child, pid, onLog, segment } = await launchWorker(options);
    const worker = new WorkerProcess(child, pid, options.instanceName, onLog, segment, options.sandbox?.heapLimitMb);
    worker.onBlsRequest = options.onBlsRequest;
    await worker.waitReady(options.startTimeoutMs ?? 30_000);
    if (options.transport === "shm" && worker.transportKind !== "shm") {
      await worker.stop(1000);
      throw new OperonError(
        "UNAVAILABLE",
        `worker for instance '${options.instanceName}' cannot use the shared-memory transport: ${worker.shm.declined ?? "not mapped"}`,
      );
    }
    return worker;
  }

  /** "shm" once the worker has mapped the shared segment; "socket" otherwise (and after exit, if it was). */
  get transportKind(): "shm" | "socket" {
    return this.shm.kind;
  }

  /** Requests sent and not yet answered (loads included). */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Loads the model instance; resolves with the backend's view of inputs and outputs. */
  load(spec: WorkerLoadSpec): Promise<WorkerLoadResult> {
    return this.request("load", {
      type: "load",
      requestId: 0,
      ...instanceLoadOf(spec, this.instanceName),
    }) as Promise<WorkerLoadResult>;
  }

  /**
   * Runs one request; outputNames undefined or empty = all outputs. Rejects
   * with the worker's OperonError. A decoupled model's answer is accepted
   * when it is exactly one response (then timing is all zeros); more or
   * none reject with UNSUPPORTED once the final flag came (use executeStream).
   */
  execute(inputs: Tensor[], outputNames?: string[], options?: ExecuteRequestOptions): Promise<WorkerExecuteResult> {
    return this.request(
      "execute",
      executeMessage(outputNames, options),
      inputs,
      undefined,
      undefined,
      options?.signal,
    ) as Promise<WorkerExecuteResult>;
  }

  /**
   * Runs one request whose answer may be many responses (decoupled models;
   * any other model gives one, final). onResponse gets each in order, the
   * last with final: true, errors included (a response-error, or the worker
   * exiting: UNAVAILABLE, final). It is called exactly once with final, and
   * never synchronously from this call. Resolves after that final call;
   * never rejects.
   */
  executeStream(
    inputs: Tensor[],
    outputNames: string[] | undefined,
    onResponse: (response: StreamResponse) => void,
    options?: StreamRequestOptions,
  ): Promise<void> {
    let finished = false;
    const deliver = (response: StreamResponse): void => {
      if (finished) return;
      if (response.final) finished = true;
      try {
        onResponse(response);
      } catch (error) {
        // The callback's failure is its owner's bug; the stream and this handle carry on.
        this.log(`executeStream callback threw: ${asOperonError(error).message}`);
      }
    };
    return this.request(
      "stream",
      executeMessage(outputNames, options),
      inputs,
      deliver,
      options?.onExecuted,
      options?.signal,
    ).then(
      () => undefined,
      (error: unknown) => deliver({ error: asOperonError(error), final: true }),
    );
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

  /**
   * Ends the process now (SIGKILL) because it broke a limit: outstanding
   * requests reject with UNAVAILABLE naming `reason`, and the exit counts as
   * unexpected, so the owner restarts the instance as after a crash.
   */
  terminate(reason: string): void {
    if (this.state === "exited") return;
    this.endedBecause ??= reason;
    this.log(`stopping the worker: ${reason}`);
    this.child.kill("SIGKILL");
  }

  /** Send time (epoch ms) of the oldest outstanding non-streaming execute; undefined when none. */
  oldestExecuteSentAt(): number | undefined {
    let oldest: number | undefined;
    for (const request of this.pending.values()) {
      if (request.kind === "execute" && (oldest === undefined || request.sentAt < oldest)) oldest = request.sentAt;
    }
    return oldest;
  }

  private request(
    kind: Pending["kind"],
    message: WorkerRequestMessage & { requestId: number },
    tensors: Tensor[] = [],
    onResponse?: (response: StreamResponse) => void,
    onExecuted?: () => void,
    signal?: CancelSignal,
  ): Promise<unknown> {
    // Asynchronously, also for "stream": its callback is never called from inside executeStream.
    if (this.state !== "running") return Promise.reject(this.unavailable());
    const requestId = this.nextRequestId++;
    message.requestId = requestId;
    return new Promise((resolve, reject) => {
      const shmOffsets = this.shm.placeInputs(tensors);
      const inputOffsets = shmOffsets.filter((offset): offset is number => offset !== undefined);
      const releases = message.type === "execute" ? this.shm.takeOutputReleases() : [];
      if (releases.length > 0) (message as { release?: number[] }).release = releases;
      this.pending.set(requestId, {
        kind,
        sentAt: Date.now(),
        resolve,
        reject,
        ...(inputOffsets.length > 0 ? { inputOffsets } : {}),
        ...(onResponse !== undefined ? { onResponse } : {}),
        ...(onExecuted !== undefined ? { onExecuted } : {}),
        ...(signal !== undefined ? { dropSignal: this.forwardCancel(requestId, signal) } : {}),
      });
      try {
        this.send(message, tensors, shmOffsets);
      } catch (error) {
        this.pending.delete(requestId);
        this.shm.releaseInputs(inputOffsets);
        this.shm.returnOutputReleases(releases);
        reject(asOperonError(error));
      }
    });
  }

  /**
   * Tells the worker when the client gives up on a request it holds (the
   * backend may then stop early: TRITONBACKEND_RequestIsCancelled); the
   * request still ends with its own final reply. Returns the listener's removal.
   */
  private forwardCancel(requestId: number, signal: CancelSignal): () => void {
    const onAbort = (): void => {
      if (!this.pending.has(requestId) || this.state === "exited") return;
      try {
        this.send({ type: "cancel", requestIds: [requestId] });
      } catch (error) {
        this.log(`cannot send a cancel to the worker: ${asOperonError(error).message}`);
      }
    };
    if (signal.aborted) {
      queueMicrotask(onAbort);
      return () => undefined;
    }
    signal.addEventListener("abort", onAbort, { once: true });
    return () => signal.removeEventListener("abort", onAbort);
  }

  /** See BackendInstance.corked: the requests of one batch leave in one write, so the worker hands them to its backend together. */
  corked<T>(fn: () => T): T {
    this.channel.cork();
    try {
      return fn();
    } finally {
      this.channel.uncork();
    }
  }

  /** The backend's custom metric families (Prometheus text) as the worker last published them; "" = none. */
  get customMetricsText(): string {
    return this.metricsText;
  }

  private send(
    message: WorkerRequestMessage,
    tensors: Tensor[] = [],
    shmOffsets: Array<number | undefined> = [],
  ): void {
    if (this.channel.writable) writeFrame(this.channel, message, tensors, shmOffsets);
  }

  private waitReady(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.ready = undefined;
        this.kill("SIGKILL");
        reject(
          new OperonError(
            "UNAVAILABLE",
            `worker for instance '${this.instanceName}' (pid ${this.pid}) did not start within ${timeoutMs} ms`,
          ),
        );
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

  private onFrame({ header, tensors, shmOffsets, device }: DecodedFrame): void {
    if (header.type === "ready") {
      this.shm.onReady(header.shm);
      if (header.wireVersion !== WORKER_WIRE_VERSION) {
        this.ready?.reject(
          new OperonError(
            "UNAVAILABLE",
            `worker for instance '${this.instanceName}' speaks wire version ${header.wireVersion}, the gateway ${WORKER_WIRE_VERSION}`,
          ),
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
    if (header.type === "executed") {
      this.onExecuted(header.requestIds);
      return;
    }
    if (header.type === "metrics") {
      if (typeof header.text === "string") this.metricsText = header.text;
      return;
    }
    if (
      header.type !== "loaded" &&
      header.type !== "result" &&
      header.type !== "error" &&
      header.type !== "response" &&
      header.type !== "response-error" &&
      header.type !== "bls-request"
    ) {
      return;
    }
    // Out of shared memory before anything else, so the worker gets the space back whatever happens next.
    const outputs = this.shm.takeOutputs(tensors, shmOffsets);
    this.shm.scheduleReleaseFlush();
    if (device === true)
      for (const output of outputs) if (output.device !== undefined) this.holdDeviceOutput(output.device);
    if (header.type === "bls-request") {
      void relayBlsRequest(
        {
          instanceName: this.instanceName,
          handler: () => this.onBlsRequest,
          isExited: () => this.state === "exited",
          send: (message, outputs) => this.send(message, outputs),
          log: (message) => this.log(message),
        },
        header,
        outputs,
      );
      return;
    }
    const pending = this.pending.get(header.requestId);
    if (pending === undefined) {
      if (header.type === "error" || header.type === "response-error")
        this.log(`worker error: ${header.kind}: ${header.message}`);
      return;
    }
    const streamed: StreamResponse | undefined =
      header.type === "response"
        ? {
            outputs,
            final: header.final,
            ...(header.parameters !== undefined ? { parameters: header.parameters } : {}),
          }
        : header.type === "response-error"
          ? { error: new OperonError(header.kind, header.message), final: header.final }
          : undefined;
    if (streamed !== undefined && !streamed.final) {
      if (pending.kind === "stream") pending.onResponse?.(streamed);
      else if (pending.kind === "execute") (pending.responses ??= []).push(streamed);
      return;
    }
    this.pending.delete(header.requestId);
    pending.dropSignal?.();
    // The worker is done with this request's inputs once it sent its (final) reply.
    if (pending.inputOffsets !== undefined) this.shm.releaseInputs(pending.inputOffsets);
    if (pending.kind === "stream") {
      // A non-decoupled model's one result (or error) ends the stream too.
      const last: StreamResponse =
        streamed ??
        (header.type === "result"
          ? { outputs, final: true }
          : header.type === "error"
            ? { error: new OperonError(header.kind, header.message), final: true }
            : {
                error: new OperonError("INTERNAL", `worker answered an execute request with '${header.type}'`),
                final: true,
              });
      pending.onResponse?.(last);
      pending.resolve(undefined);
    } else if (streamed !== undefined && pending.kind === "execute") this.settleDecoupledExecute(pending, streamed);
    else if (header.type === "error") pending.reject(new OperonError(header.kind, header.message));
    else if (header.type === "loaded" && pending.kind === "load") {
      pending.resolve({
        inputs: header.inputs,
        outputs: header.outputs,
        ...(header.config !== undefined ? { config: header.config } : {}),
      });
    } else if (header.type === "result" && pending.kind === "execute") {
      pending.resolve({
        outputs,
        timing: header.timing,
        ...(header.parameters !== undefined ? { parameters: header.parameters } : {}),
      });
    } else
      pending.reject(new OperonError("INTERNAL", `worker answered a ${pending.kind} request with '${header.type}'`));
  }

  /**
   * A GPU output (an operator's intermediate): the worker holds its region
   * until release() says the consuming step is done with it. Once the worker
   * exited its pool is gone: release is a no-op then.
   */
  private holdDeviceOutput(device: DeviceTensor): void {
    let held = true;
    device.release = () => {
      if (!held) return;
      held = false;
      if (this.state === "exited") return;
      try {
        this.send({ type: "device-release", regions: [device.region] });
      } catch (error) {
        this.log(`cannot give a GPU output back to the worker: ${asOperonError(error).message}`);
      }
    };
  }

  /** The worker's execute returned for these requests: tell the streams that asked (once each). */
  private onExecuted(requestIds: unknown): void {
    if (!Array.isArray(requestIds)) return;
    for (const requestId of requestIds) {
      const pending = this.pending.get(requestId as number);
      const notify = pending?.onExecuted;
      if (pending === undefined || notify === undefined) continue;
      pending.onExecuted = undefined;
      try {
        notify();
      } catch (error) {
        this.log(`executeStream onExecuted callback threw: ${asOperonError(error).message}`);
      }
    }
  }

  /** execute() on a decoupled model: one response is a result; an error, none or several are not. */
  private settleDecoupledExecute(pending: Pending, last: StreamResponse): void {
    const responses = [...(pending.responses ?? []), last];
    const failed = responses.find(
      (response): response is { error: OperonError; final: boolean } => "error" in response,
    );
    if (failed !== undefined) {
      pending.reject(failed.error);
      return;
    }
    const withData = responses.filter(
      (response) => "outputs" in response && (response.outputs.length > 0 || !response.final),
    );
    if (withData.length === 1) {
      pending.resolve({
        outputs: (withData[0] as { outputs: Tensor[] }).outputs,
        timing: { computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 },
      });
      return;
    }
    pending.reject(
      new OperonError(
        "UNSUPPORTED",
        `the model of instance '${this.instanceName}' is decoupled and sent ${withData.length} responses to one request: it needs a streaming call`,
      ),
    );
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
      this.ready.reject(
        new OperonError(
          "UNAVAILABLE",
          `worker for instance '${this.instanceName}' (pid ${this.pid}) exited during start-up (${how})`,
        ),
      );
      this.ready = undefined;
    }
    const error = this.unavailable();
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const request of pending) request.reject(error);
    this.channel.destroy();
    this.shm.drop();
    this.resolveExited(info);
    this.emit("exit", info);
  }

  private unavailable(): OperonError {
    const who = `worker for instance '${this.instanceName}' (pid ${this.pid})`;
    const info = this.exitInfo;
    if (info === undefined) {
      return new OperonError(
        "UNAVAILABLE",
        this.state === "starting" ? `${who} is not ready yet` : `${who} is stopping; request not accepted`,
      );
    }
    const how = info.signal !== null ? `signal ${info.signal}` : `code ${info.code}`;
    if (this.endedBecause !== undefined && !info.expected) {
      return new OperonError("UNAVAILABLE", `${who} was stopped (${how}): ${this.endedBecause}; request not completed`);
    }
    return new OperonError(
      "UNAVAILABLE",
      info.expected
        ? `${who} was stopped (${how}); request not completed`
        : `${who} exited unexpectedly (${how}); request not completed`,
    );
  }

  /** Gateway-side findings about the worker go the same way as its own log lines. */
  private log(message: string, level: "warn" | "error" = "error"): void {
    try {
      this.onLog(
        JSON.stringify({
          time: new Date().toISOString(),
          level,
          instance: this.instanceName,
          pid: this.pid,
          msg: message,
        }),
      );
    } catch {
      // see the stderr reader
    }
  }
}

function executeMessage(outputNames: string[] | undefined, options: ExecuteRequestOptions | undefined): ExecuteMessage {
  return {
    type: "execute",
    requestId: 0,
    ...(outputNames !== undefined && outputNames.length > 0 ? { outputNames } : {}),
    ...(options?.id !== undefined && options.id !== "" ? { id: options.id } : {}),
    ...(options?.logIds !== undefined && options.logIds.length > 0 ? { logIds: options.logIds } : {}),
    ...(options?.parameters !== undefined && Object.keys(options.parameters).length > 0
      ? { parameters: options.parameters }
      : {}),
    ...(options?.deviceOutputs !== undefined ? { deviceOutputs: options.deviceOutputs } : {}),
  };
}

// The instance contract's and the launcher's types, where callers of WorkerProcess have always found them.
export type {
  WorkerSpawnOptions,
  WorkerTransport,
  BlsRequest,
  BlsRequestHandler,
  ExecuteRequestOptions,
  StreamRequestOptions,
  StreamResponse,
  WorkerExecuteResult,
  WorkerExitInfo,
  WorkerLoadResult,
  WorkerLoadSpec,
};

import { once } from "node:events";
import type { Duplex } from "node:stream";
import { asOperonError, OperonError } from "@operon/protocol/errors";
import { logIdFields } from "@operon/protocol/logger";
import type { Tensor } from "@operon/protocol/tensor";
import { type DecodedFrame, type FrameSink, FrameDecoder, writeFrame } from "@operon/protocol/worker-frame-codec";
import {
  type ExecuteMessage,
  type LoadMessage,
  WORKER_WIRE_VERSION,
  type WorkerReplyMessage,
} from "@operon/protocol/worker-wire";
import { BACKEND_API_VERSION } from "@operon/backend-api/backend-api-version";
import {
  type Backend,
  type BackendHost,
  type BackendLog,
  type BackendRequest,
  type BackendResponse,
  type ExecuteGuard,
  type ExecuteGuardOptions,
  type RequestBackend,
  isRequestBackend,
} from "@operon/backend-api/backend";
import { ExecuteWatchdog } from "./execute-watchdog.js";
import { WorkerBlsCalls } from "./worker-bls-calls.js";
import { WorkerShmOutputs, type WorkerSharedMemory } from "./worker-shm-outputs.js";

export type { WorkerSharedMemory };

/** False in a sandboxed worker (Node's permission model without --allow-worker). */
function mayStartThreads(): boolean {
  const permission = (process as { permission?: { has(scope: string): boolean } }).permission;
  return permission === undefined || permission.has("worker");
}

export interface WorkerServerOptions {
  /** The byte stream to the gateway (fd 3 in a real worker). */
  channel: Duplex & FrameSink;
  /** Undefined when the gateway offered no shared memory: every tensor travels in frames. */
  sharedMemory?: WorkerSharedMemory;
  createBackend: (name: string) => Promise<Backend>;
  log: BackendLog;
  /** Called once the load message names the instance, so later log lines carry it. */
  setInstanceName?: (name: string) => void;
  /** Ends the process: 0 after shutdown or when the gateway went away, non-zero for a corrupt stream. */
  exit: (code: number) => void;
  /**
   * The channel's file descriptor (3 in a real worker), for the execute
   * hang guard, which writes its error frames there from its own thread.
   * Undefined: a guard that fires only logs and kills the process.
   */
  channelFd?: number;
}

/**
 * Serves one model instance over the worker channel. Every request (load,
 * execute, shutdown) joins one FIFO queue and runs to completion before the
 * next starts: backends never see concurrent calls and replies leave in the
 * order requests arrived. Shutdown therefore finishes all earlier work first.
 *
 * With shared memory (worker-shm-outputs.ts), input tensors are views into
 * the gateway's half (no copy; the gateway keeps them intact until this
 * request's reply) and each output is copied once into this worker's half.
 * Releases are applied as they arrive, ahead of the queue.
 *
 * Request-level backends (RequestBackend: the TypeScript backend) get every
 * execute waiting at the head of the queue in one call, and answer each
 * request through its respond(): `result` / `error` frames, or for a
 * decoupled model `response` / `response-error` frames that may still flow
 * after the call returned and the queue moved on; an `executed` frame tells
 * the gateway that the call returned, so it can send the next requests.
 * While such a call waits on a BLS inference (worker-bls-calls.ts), the
 * gateway's `bls-response` is taken as it arrives, like `release`: it never
 * queues behind the execute that awaits it.
 */
export class WorkerServer {
  private readonly decoder: FrameDecoder;
  private readonly shm: WorkerShmOutputs;
  private readonly bls: WorkerBlsCalls;
  private readonly queue: DecodedFrame[] = [];
  private draining = false;
  private backend: Backend | undefined;
  private shutdownRequested = false;
  private exited = false;
  /** Hang guards handed to the backend; told when the socket buffer holds a partial frame. */
  private readonly watchdogs = new Set<ExecuteWatchdog>();
  private readonly host: BackendHost = {
    infer: (call) => this.bls.infer(call),
    createExecuteGuard: (options) => this.createExecuteGuard(options),
    allocateOutput: (byteLength) => this.shm.allocateOutput(byteLength),
    freeOutput: (buffer) => this.shm.freeOutput(buffer),
    publishMetrics: (text) => void this.send({ type: "metrics", text }),
  };
  /** Requests handed to a request-level backend and not yet finally answered, by wire id: a `cancel` marks them. */
  private readonly liveRequests = new Map<number, { cancelled: boolean; request?: BackendRequest }>();
  /** Cancelled wire ids not (yet) handed to the backend: still queued here. */
  private readonly cancelledQueued = new Set<number>();
  private instanceName = "";
  /**
   * The log fields of the client requests whose execute runs now (their
   * X-Request-Ids, from the execute frames): every line the backend or this
   * server writes meanwhile carries them. Executes run one at a time.
   */
  private executing: ReturnType<typeof logIdFields> | undefined;
  /** The log the backend gets: options.log, plus the running execute's request ids. */
  private readonly backendLog: BackendLog = (level, message, fields) =>
    this.options.log(level, message, this.executing !== undefined ? { ...this.executing, ...fields } : fields);

  constructor(private readonly options: WorkerServerOptions) {
    this.shm = new WorkerShmOutputs(options.sharedMemory, options.log, () => this.exited);
    this.decoder = new FrameDecoder(this.shm.decoderOptions);
    this.bls = new WorkerBlsCalls({
      isClosed: () => this.exited || options.channel.writableEnded,
      send: (header, inputs) => void this.send(header, inputs, this.shm.placeOutputs(inputs)),
      log: options.log,
    });
  }

  start(): void {
    const { channel } = this.options;
    channel.on("data", (chunk: Buffer) => this.onData(chunk));
    // The gateway closed its end (or died): nobody can receive results any more.
    channel.on("end", () => this.exit(0, "gateway channel closed; exiting"));
    channel.on("error", (error: Error) => this.exit(0, `gateway channel failed (${error.message}); exiting`));
    this.send({
      type: "ready",
      pid: process.pid,
      wireVersion: WORKER_WIRE_VERSION,
      backendApiVersion: BACKEND_API_VERSION.major,
      ...(this.shm.status !== undefined ? { shm: this.shm.status } : {}),
    });
  }

  private onData(chunk: Buffer): void {
    let frames: DecodedFrame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (error) {
      const reason = asOperonError(error).message;
      this.send({ type: "error", requestId: 0, kind: "INTERNAL", message: reason });
      this.exit(1, `corrupt frame from the gateway: ${reason}`, "error");
      return;
    }
    let queued = false;
    for (const frame of frames) {
      // Output space the gateway hands back is free at once, not after the queued work.
      if (frame.header.type === "release") {
        this.shm.releaseOutputs(frame.header.offsets);
        continue;
      }
      // An execute may be waiting for this one: it cannot wait in the queue behind it.
      if (frame.header.type === "bls-response") {
        this.bls.onResponse(frame);
        continue;
      }
      // The backend is still executing those requests: it must learn of this now, not after them.
      if (frame.header.type === "cancel") {
        this.onCancel(frame.header.requestIds);
        continue;
      }
      // GPU outputs the next step has read: back to the pool now, whatever is queued.
      if (frame.header.type === "device-release") {
        const backend = this.backend;
        if (backend !== undefined && isRequestBackend(backend)) backend.releaseDeviceOutputs?.(frame.header.regions);
        continue;
      }
      if (frame.header.type === "execute" && frame.header.release !== undefined)
        this.shm.releaseOutputs(frame.header.release);
      this.queue.push(frame);
      queued = true;
    }
    if (queued && !this.draining) void this.drain();
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      for (let frame = this.queue.shift(); frame !== undefined; frame = this.queue.shift()) {
        const waitForDrain = await this.handle(frame);
        if (waitForDrain && !this.exited) await once(this.options.channel, "drain");
      }
    } finally {
      this.draining = false;
    }
  }

  /** Returns true when the channel asked for backpressure. */
  private async handle(frame: DecodedFrame): Promise<boolean> {
    const { header, tensors } = frame;
    if (this.exited) return false;
    if (this.shutdownRequested && header.type !== "shutdown") {
      const requestId = "requestId" in header ? header.requestId : 0;
      return !this.send({ type: "error", requestId, kind: "UNAVAILABLE", message: "worker is shutting down" });
    }
    switch (header.type) {
      case "load":
        return !(await this.load(header));
      case "execute":
        if (this.backend !== undefined && isRequestBackend(this.backend))
          return this.executeRequests(this.backend, frame);
        // Tensor-level backends cannot be told of a cancel: forget it.
        this.cancelledQueued.delete(header.requestId);
        return !(await this.execute(header, tensors));
      case "shutdown":
        await this.shutdown();
        return false;
      default:
        this.options.log("warn", `ignoring unexpected '${header.type}' message from the gateway`);
        return false;
    }
  }

  private async load(message: LoadMessage): Promise<boolean> {
    this.options.setInstanceName?.(message.instanceName);
    this.instanceName = message.instanceName;
    if (this.backend !== undefined) {
      return this.send({
        type: "error",
        requestId: message.requestId,
        kind: "ALREADY_EXISTS",
        message: "this worker already serves a model instance",
      });
    }
    const started = performance.now();
    try {
      const backend = await this.options.createBackend(message.backend);
      await backend.initialize({
        modelPath: message.modelPath,
        config: message.config,
        instanceName: message.instanceName,
        parameters: message.parameters ?? {},
        instanceKind: message.instanceKind,
        deviceId: message.deviceId,
        log: this.backendLog,
        host: this.host,
        ...(message.native !== undefined ? { native: message.native } : {}),
      });
      this.backend = backend;
      const { inputs, outputs } = backend.metadata();
      const config = backend.completedConfig?.();
      this.options.log("info", "model instance loaded", {
        backend: message.backend,
        ms: Math.round(performance.now() - started),
      });
      return this.send({
        type: "loaded",
        requestId: message.requestId,
        inputs,
        outputs,
        ...(config !== undefined ? { config } : {}),
      });
    } catch (error) {
      const failure = asOperonError(error);
      this.options.log("error", "model instance failed to load", { kind: failure.kind, reason: failure.message });
      return this.send({ type: "error", requestId: message.requestId, kind: failure.kind, message: failure.message });
    }
  }

  private async execute(message: ExecuteMessage, inputs: Tensor[]): Promise<boolean> {
    try {
      if (this.backend === undefined)
        throw new OperonError("UNAVAILABLE", "no model instance is loaded in this worker");
      if (message.logIds !== undefined) this.executing = logIdFields(message.logIds);
      const { outputs, timing } = await this.backend.execute(inputs, message.outputNames);
      this.executing = undefined;
      return this.send(
        { type: "result", requestId: message.requestId, timing },
        outputs,
        this.shm.placeOutputs(outputs),
      );
    } catch (error) {
      const failure = asOperonError(error);
      if (failure.kind === "INTERNAL")
        this.backendLog("error", "execute failed", { wireRequestId: message.requestId, reason: failure.message });
      this.executing = undefined;
      return this.send({ type: "error", requestId: message.requestId, kind: failure.kind, message: failure.message });
    }
  }

  /**
   * Hands the backend this execute and every one queued right behind it,
   * as far as maxBatchSize allows (sum of the first inputs' batch
   * dimensions; one request when it is 0). Returns true when the channel
   * asked for backpressure.
   */
  private async executeRequests(backend: RequestBackend, first: DecodedFrame): Promise<boolean> {
    const frames = [first];
    if (backend.maxBatchSize > 0) {
      let total = batchSizeOf(first.tensors);
      for (let next = this.queue[0]; next?.header.type === "execute"; next = this.queue[0]) {
        const size = batchSizeOf(next.tensors);
        if (total + size > backend.maxBatchSize) break;
        this.queue.shift();
        frames.push(next);
        total += size;
      }
    }
    const requests = frames.map((frame) => this.backendRequest(frame, backend.decoupled));
    const logIds = requests.flatMap((request) => request.logIds ?? []);
    if (logIds.length > 0) this.executing = logIdFields(logIds);
    try {
      await backend.executeRequests(requests);
    } catch (error) {
      // The contract says it never rejects; if it does, nobody else answers these requests.
      const failure = asOperonError(error);
      this.backendLog("error", "backend executeRequests failed", { reason: failure.message });
      for (const request of requests) if (!request.answered) request.respond({ error: failure }, true);
    } finally {
      this.executing = undefined;
    }
    if (backend.decoupled) {
      // execute returned: the gateway may send the next requests while these stream on.
      this.send({ type: "executed", requestIds: requests.map((request) => request.requestId) });
    } else {
      for (const request of requests) {
        if (!request.answered)
          request.respond(
            { error: new OperonError("INTERNAL", `the backend gave no response to request ${request.requestId}`) },
            true,
          );
      }
    }
    return this.options.channel.writableNeedDrain;
  }

  /** One execute frame as a BackendRequest whose respond() writes its reply frames. */
  private backendRequest(frame: DecodedFrame, decoupled: boolean): BackendRequest & { readonly answered: boolean } {
    const header = frame.header as ExecuteMessage;
    const { requestId } = header;
    let answered = false;
    const live: { cancelled: boolean; request?: BackendRequest } = {
      cancelled: this.cancelledQueued.delete(requestId),
    };
    this.liveRequests.set(requestId, live);
    const request: BackendRequest & { readonly answered: boolean } = {
      requestId,
      id: header.id ?? "",
      ...(header.logIds !== undefined ? { logIds: header.logIds } : {}),
      inputs: frame.tensors,
      outputNames: header.outputNames ?? [],
      parameters: header.parameters ?? {},
      ...(header.deviceOutputs !== undefined ? { deviceOutputs: header.deviceOutputs } : {}),
      get cancelled() {
        return live.cancelled;
      },
      get answered() {
        return answered;
      },
      respond: (response: BackendResponse, final: boolean): void => {
        if (answered) throw new OperonError("INTERNAL", `request ${requestId} already has its final response`);
        if (!decoupled && !final)
          throw new OperonError("INTERNAL", `request ${requestId}: a non-decoupled model answers once, with final`);
        answered = final;
        if (final) this.liveRequests.delete(requestId);
        if (decoupled) {
          if ("error" in response) {
            this.send({
              type: "response-error",
              requestId,
              final,
              kind: response.error.kind,
              message: response.error.message,
            });
          } else {
            const parameters =
              response.parameters !== undefined && Object.keys(response.parameters).length > 0
                ? { parameters: response.parameters }
                : {};
            this.send(
              { type: "response", requestId, final, ...parameters },
              response.outputs,
              this.shm.placeOutputs(response.outputs),
            );
          }
        } else if ("error" in response) {
          this.send({ type: "error", requestId, kind: response.error.kind, message: response.error.message });
        } else {
          const timing = response.timing ?? { computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 };
          const parameters =
            response.parameters !== undefined && Object.keys(response.parameters).length > 0
              ? { parameters: response.parameters }
              : {};
          this.send(
            { type: "result", requestId, timing, ...parameters },
            response.outputs,
            this.shm.placeOutputs(response.outputs),
          );
        }
      },
    };
    live.request = request;
    return request;
  }

  /** Marks requests the client gave up on; ids this worker no longer holds are ignored (their final reply crossed the cancel). */
  private onCancel(requestIds: unknown): void {
    if (!Array.isArray(requestIds)) {
      this.options.log("error", "ignoring a malformed cancel from the gateway", { requestIds });
      return;
    }
    const queued = new Set(this.queue.map((frame) => (frame.header.type === "execute" ? frame.header.requestId : -1)));
    const running: BackendRequest[] = [];
    for (const requestId of requestIds as number[]) {
      const live = this.liveRequests.get(requestId);
      if (live !== undefined && !live.cancelled) {
        live.cancelled = true;
        if (live.request !== undefined) running.push(live.request);
      } else if (queued.has(requestId)) this.cancelledQueued.add(requestId);
    }
    const backend = this.backend;
    if (running.length > 0 && backend !== undefined && isRequestBackend(backend)) backend.cancelRequests?.(running);
  }

  private async createExecuteGuard(options: ExecuteGuardOptions): Promise<ExecuteGuard> {
    // A sandboxed worker may start no thread: the gateway's sandbox guard (sandbox-guard.ts) enforces the timeout there.
    if (!mayStartThreads()) return { arm: () => () => undefined, close: () => undefined };
    const { channel } = this.options;
    const watchdog = await ExecuteWatchdog.start({
      ...options,
      ...(this.options.channelFd !== undefined ? { channelFd: this.options.channelFd } : {}),
      instance: this.instanceName,
      channelIdle: () => channel.writableLength === 0,
      onClose: () => this.watchdogs.delete(watchdog),
      onError: (error) =>
        this.options.log("error", "the execute hang guard failed; executes are unguarded", { reason: error.message }),
    });
    this.watchdogs.add(watchdog);
    return watchdog;
  }

  private async shutdown(): Promise<void> {
    this.shutdownRequested = true;
    const backend = this.backend;
    this.backend = undefined;
    try {
      await backend?.finalize();
    } catch (error) {
      this.options.log("warn", "backend finalize failed", { reason: asOperonError(error).message });
    }
    for (const watchdog of [...this.watchdogs]) watchdog.close();
    this.options.log("info", "shut down");
    // Exit only once every reply has been handed to the kernel.
    this.options.channel.end(() => this.exit(0));
  }

  private send(
    header: WorkerReplyMessage,
    tensors: readonly Tensor[] = [],
    shmOffsets: ReadonlyArray<number | undefined> = [],
  ): boolean {
    if (this.exited || this.options.channel.writableEnded) return true;
    try {
      const ok = writeFrame(this.options.channel, header, tensors, shmOffsets);
      // Part of that frame waits in the socket buffer: a hang guard firing now must not write into the stream.
      if (this.watchdogs.size > 0 && this.options.channel.writableLength > 0) {
        for (const watchdog of this.watchdogs) watchdog.markUnclean();
      }
      return ok;
    } catch (error) {
      // The gateway never learns of these offsets: take them back.
      this.shm.takeBack(shmOffsets);
      // E.g. a result over the frame limit: report it instead of the result.
      if (header.type === "result" && tensors.length > 0) {
        const failure = asOperonError(error);
        return this.send({ type: "error", requestId: header.requestId, kind: failure.kind, message: failure.message });
      }
      if (header.type === "response" && tensors.length > 0) {
        const failure = asOperonError(error);
        return this.send({
          type: "response-error",
          requestId: header.requestId,
          final: header.final,
          kind: failure.kind,
          message: failure.message,
        });
      }
      throw error;
    }
  }

  private exit(code: number, reason?: string, level: "info" | "error" = "info"): void {
    if (this.exited) return;
    this.exited = true;
    if (reason !== undefined) this.options.log(level, reason);
    this.options.exit(code);
  }
}

/** A request's batch size: its first input's leading dimension (1 without inputs). */
function batchSizeOf(tensors: readonly Tensor[]): number {
  return tensors[0]?.shape[0] ?? 1;
}

import { type ChildProcess, spawn } from "node:child_process";
import { chownSync } from "node:fs";
import { EventEmitter } from "node:events";
import type net from "node:net";
import { createInterface } from "node:readline";
import { OperonError, asOperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
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
import { type SharedSegment, createSegment, dropSegment, unlinkSegment } from "./shm-segment.js";
import { type WorkerIdentity, workerEnvironment } from "./worker-environment.js";
import {
  type BlsRequestMessage,
  type DecodedFrame,
  type ExecuteMessage,
  FrameDecoder,
  SHM_MIN_TENSOR_BYTES,
  WORKER_SHM_BYTES_ENV,
  WORKER_SHM_NAME_ENV,
  WORKER_WIRE_VERSION,
  type WorkerRequestMessage,
  writeFrame,
} from "@operon/protocol/worker-wire";

/**
 * How tensor bytes travel between gateway and worker. "shm": a shared-memory
 * segment per worker, the socket carrying only small control frames (needs
 * the native addon); "socket": inside the frames; "auto": shm when the addon
 * loads and the worker maps the segment, else socket.
 */
export type WorkerTransport = "auto" | "shm" | "socket";

export interface WorkerSpawnOptions {
  /** Path of the worker entry (packages/worker/dist/main.js). */
  entry: string;
  instanceName: string;
  /**
   * Environment of the worker; default workerEnvironment(process.env): an
   * allow-list, never the server's secrets. OPERON_WORKER_INSTANCE is added.
   */
  env?: NodeJS.ProcessEnv;
  /** Run the worker as this account (the server runs as root and was given --worker-user); default the server's own. */
  identity?: WorkerIdentity;
  /** Receives each stderr line of the worker (JSON log lines, or native libraries' text). Default: forward to process.stderr. */
  onLog?: (line: string) => void;
  /** How long the worker may take to open its channel; default 30 s. */
  startTimeoutMs?: number;
  /** Default "auto". With "shm", spawn fails (UNAVAILABLE) when shared memory cannot be set up. */
  transport?: WorkerTransport;
  /** Size of the shared-memory segment, both directions together (half each); default 64 MiB. */
  sharedMemoryBytes?: number;
  /** Serves the worker's BLS calls (see WorkerProcess.onBlsRequest). */
  onBlsRequest?: BlsRequestHandler;
}

/** Longest a copied-out output's space waits to be handed back when no execute frame carries it. */
const RELEASE_FLUSH_MS = 2;

/** Outputs at least this large are copied out of shared memory into the addon's recycled memory. */
const LARGE_COPY_BYTES = 64 * 1024;

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
 * Shared memory (transportKind "shm"): each input is copied once into the
 * gateway -> worker half, where the worker reads it in place; its space is
 * reused when the request's reply arrives. Outputs come back in the
 * worker -> gateway half; once copied out, their offsets go back to the
 * worker on the next execute frame, or in a `release` frame when no execute
 * has carried them within RELEASE_FLUSH_MS (a write is costly; under load the
 * next execute always comes first). A tensor that does not fit in the free
 * space, or is smaller than SHM_MIN_TENSOR_BYTES, travels in the frame, as
 * with the socket transport.
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
  /** The segment while offered or in use; undefined on the socket transport and after exit. */
  private shm: SharedSegment | undefined;
  private shmMapped = false;
  private shmDeclined: string | undefined;
  /** Output offsets copied out and not yet handed back to the worker. */
  private outputReleases: number[] = [];
  private releaseScheduled = false;
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
  ) {
    super();
    this.shm = shm;
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
    const transport = options.transport ?? "auto";
    const onLog = options.onLog ?? ((line: string) => void process.stderr.write(`${line}\n`));
    const shm = transport === "socket" ? undefined : createSegment(options, onLog);
    const env: NodeJS.ProcessEnv = {
      ...(options.env ?? workerEnvironment(process.env, options.identity)),
      OPERON_WORKER_INSTANCE: options.instanceName,
    };
    delete env[WORKER_SHM_NAME_ENV];
    delete env[WORKER_SHM_BYTES_ENV];
    if (shm !== undefined) {
      env[WORKER_SHM_NAME_ENV] = shm.name;
      env[WORKER_SHM_BYTES_ENV] = String(shm.buffer.byteLength);
    }
    const identity = options.identity;
    // The segment is created 0600 by the server: a worker of another account may open it only once it owns it.
    if (identity !== undefined && shm !== undefined) chownSegment(shm, identity, onLog);
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, [options.entry], {
        stdio: ["ignore", "inherit", "pipe", "pipe"],
        env,
        ...(identity !== undefined ? { uid: identity.uid, gid: identity.gid } : {}),
      });
    } catch (error) {
      dropSegment(shm);
      throw error;
    }
    if (child.pid === undefined) {
      dropSegment(shm);
      const error = await new Promise<Error>((resolve) => child.once("error", resolve));
      throw new OperonError(
        "UNAVAILABLE",
        `cannot start worker for instance '${options.instanceName}': ${error.message}`,
        { cause: error },
      );
    }
    const worker = new WorkerProcess(child, child.pid, options.instanceName, onLog, shm);
    worker.onBlsRequest = options.onBlsRequest;
    await worker.waitReady(options.startTimeoutMs ?? 30_000);
    if (transport === "shm" && worker.transportKind !== "shm") {
      await worker.stop(1000);
      throw new OperonError(
        "UNAVAILABLE",
        `worker for instance '${options.instanceName}' cannot use the shared-memory transport: ${worker.shmDeclined ?? "not mapped"}`,
      );
    }
    return worker;
  }

  /** "shm" once the worker has mapped the shared segment; "socket" otherwise (and after exit, if it was). */
  get transportKind(): "shm" | "socket" {
    return this.shmMapped ? "shm" : "socket";
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
      backend: spec.backend,
      modelPath: spec.modelPath,
      config: spec.config,
      instanceName: this.instanceName,
      parameters: spec.parameters ?? {},
      ...(spec.instanceKind !== undefined ? { instanceKind: spec.instanceKind } : {}),
      ...(spec.deviceId !== undefined ? { deviceId: spec.deviceId } : {}),
      ...(spec.native !== undefined ? { native: spec.native } : {}),
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
      const shmOffsets = this.placeInputs(tensors);
      const inputOffsets = shmOffsets.filter((offset): offset is number => offset !== undefined);
      const releases = message.type === "execute" ? this.takeOutputReleases() : [];
      if (releases.length > 0) (message as { release?: number[] }).release = releases;
      this.pending.set(requestId, {
        kind,
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
        for (const offset of inputOffsets) this.shm?.inputRing.release(offset);
        this.outputReleases.unshift(...releases);
        if (releases.length > 0) this.scheduleReleaseFlush();
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

  /** Copies each input that fits into the gateway -> worker half; undefined entries travel in the frame. */
  private placeInputs(tensors: readonly Tensor[]): Array<number | undefined> {
    const shm = this.shm;
    if (shm === undefined || !this.shmMapped || tensors.length === 0) return [];
    return tensors.map((tensor) => {
      if (tensor.data.length < SHM_MIN_TENSOR_BYTES) return undefined;
      const offset = shm.inputRing.allocate(tensor.data.length);
      if (offset !== undefined) shm.toWorker.set(tensor.data, offset);
      return offset;
    });
  }

  /** Copies shared-memory outputs out into fresh Buffers and queues their offsets for release. */
  private takeOutputs(tensors: Tensor[], shmOffsets: Array<number | undefined>): Tensor[] {
    if (!shmOffsets.some((offset) => offset !== undefined)) return tensors;
    return tensors.map((tensor, i) => {
      const offset = shmOffsets[i];
      if (offset === undefined) return tensor;
      const data = this.freshBuffer(tensor.data.length);
      tensor.data.copy(data);
      this.outputReleases.push(offset);
      return { ...tensor, data };
    });
  }

  /**
   * Memory for a copy out of the segment. Large ones come from the addon's
   * recycling allocator: a fresh malloc of that size would page-fault on
   * every page during the copy, costing more than the copy itself.
   */
  private freshBuffer(byteLength: number): Buffer {
    if (byteLength < LARGE_COPY_BYTES || this.shm === undefined) return Buffer.allocUnsafe(byteLength);
    return Buffer.from(this.shm.api.allocate(byteLength));
  }

  private takeOutputReleases(): number[] {
    if (this.outputReleases.length === 0) return [];
    const releases = this.outputReleases;
    this.outputReleases = [];
    return releases;
  }

  /** Hands released output space back soon, unless an execute frame carries it first. */
  private scheduleReleaseFlush(): void {
    if (this.releaseScheduled || this.outputReleases.length === 0) return;
    this.releaseScheduled = true;
    setTimeout(() => {
      this.releaseScheduled = false;
      const offsets = this.takeOutputReleases();
      if (offsets.length === 0 || this.state === "exited") return;
      try {
        this.send({ type: "release", offsets });
      } catch (error) {
        this.log(`cannot hand shared memory back to the worker: ${asOperonError(error).message}`);
      }
    }, RELEASE_FLUSH_MS).unref();
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

  private onFrame({ header, tensors, shmOffsets }: DecodedFrame): void {
    if (header.type === "ready") {
      this.onReadyShm(header.shm);
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
    const outputs = this.takeOutputs(tensors, shmOffsets);
    this.scheduleReleaseFlush();
    if (header.type === "bls-request") {
      void this.serveBls(header, outputs);
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
    if (pending.inputOffsets !== undefined)
      for (const offset of pending.inputOffsets) this.shm?.inputRing.release(offset);
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

  /** Runs one BLS call through onBlsRequest and answers the worker; outputs always travel inline. */
  private async serveBls(header: BlsRequestMessage, inputs: Tensor[]): Promise<void> {
    const { blsId } = header;
    let outputs: Tensor[] | undefined;
    let failure: OperonError | undefined;
    try {
      const handler = this.onBlsRequest;
      if (handler === undefined)
        throw new OperonError(
          "UNAVAILABLE",
          `BLS is not available: nothing serves model calls from instance '${this.instanceName}'`,
        );
      const result = await handler({
        model: header.model,
        inputs,
        ...(header.version !== undefined ? { version: header.version } : {}),
        ...(header.outputNames !== undefined ? { outputNames: header.outputNames } : {}),
        ...(header.parameters !== undefined ? { parameters: header.parameters } : {}),
      });
      outputs = result.outputs;
    } catch (error) {
      failure = asOperonError(error);
    }
    if (this.state === "exited") return;
    try {
      if (outputs !== undefined) {
        this.send({ type: "bls-response", blsId, ok: true }, outputs);
        return;
      }
    } catch (error) {
      // E.g. outputs over the frame limit: the model learns why instead.
      failure = asOperonError(error);
    }
    const { kind, message } = failure ?? new OperonError("INTERNAL", "BLS call failed");
    try {
      this.send({ type: "bls-response", blsId, ok: false, kind, message });
    } catch (error) {
      this.log(`cannot answer a BLS call of the worker: ${asOperonError(error).message}`);
    }
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
    // Every output was copied out as it arrived: nothing refers to the segment any more.
    dropSegment(this.shm);
    this.shm = undefined;
    this.outputReleases = [];
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
    return new OperonError(
      "UNAVAILABLE",
      info.expected
        ? `${who} was stopped (${how}); request not completed`
        : `${who} exited unexpectedly (${how}); request not completed`,
    );
  }

  /** The worker's answer to the shared-memory offer; either way the name can go now. */
  private onReadyShm(
    status: { status: "mapped"; byteLength: number } | { status: "unavailable"; reason: string } | undefined,
  ): void {
    const shm = this.shm;
    if (shm === undefined) return;
    unlinkSegment(shm);
    if (status?.status === "mapped" && status.byteLength === shm.buffer.byteLength) {
      this.shmMapped = true;
      return;
    }
    this.shmDeclined =
      status === undefined
        ? "the worker did not take up the shared-memory offer"
        : status.status === "unavailable"
          ? status.reason
          : `the worker mapped ${status.byteLength} bytes, the gateway created ${shm.buffer.byteLength}`;
    this.log(`shared memory not used, tensors travel over the socket: ${this.shmDeclined}`, "warn");
    dropSegment(shm);
    this.shm = undefined;
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
    ...(options?.parameters !== undefined && Object.keys(options.parameters).length > 0
      ? { parameters: options.parameters }
      : {}),
  };
}

// The instance contract's types, where callers of WorkerProcess have always found them.
export type {
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

/** Hands a worker's shared-memory segment to the account it runs as (Linux names segments under /dev/shm). */
function chownSegment(shm: SharedSegment, identity: WorkerIdentity, onLog: (line: string) => void): void {
  try {
    chownSync(`/dev/shm${shm.name}`, identity.uid, identity.gid);
  } catch (error) {
    // The worker then cannot map it and falls back to the socket transport ("auto").
    onLog(`cannot hand the shared-memory segment to ${identity.name}: ${(error as Error).message}`);
  }
}

import { once } from "node:events";
import type { Duplex } from "node:stream";
import { asOperonError, OperonError } from "@operon/protocol/errors";
import { ShmRingAllocator } from "@operon/protocol/shm-ring-allocator";
import type { Tensor } from "@operon/protocol/tensor";
import {
  type DecodedFrame,
  type ExecuteMessage,
  type FrameSink,
  FrameDecoder,
  type LoadMessage,
  type SharedMemoryStatus,
  SHM_MIN_TENSOR_BYTES,
  WORKER_WIRE_VERSION,
  type WorkerReplyMessage,
  sharedRegionLayout,
  writeFrame,
} from "@operon/protocol/worker-wire";
import { BACKEND_API_VERSION, type Backend, type BackendLog } from "./backends/backend.js";

/**
 * The shared-memory segment the gateway offered (see worker-wire): mapped
 * (the whole segment; the server splits it into its two halves), or the
 * reason it could not be, which the gateway learns in `ready`.
 */
export type WorkerSharedMemory = { mapped: true; segment: Buffer } | { mapped: false; reason: string };

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
}

/**
 * Serves one model instance over the worker channel. Every request (load,
 * execute, shutdown) joins one FIFO queue and runs to completion before the
 * next starts: backends never see concurrent calls and replies leave in the
 * order requests arrived. Shutdown therefore finishes all earlier work first.
 *
 * With shared memory, input tensors are views into the gateway's half (no
 * copy; the gateway keeps them intact until this request's reply) and each
 * output is copied once into this worker's half, whose space the gateway
 * hands back (`release`) after copying it out. Releases are applied as they
 * arrive, ahead of the queue. An output that does not fit goes inline.
 */
export class WorkerServer {
  private readonly decoder: FrameDecoder;
  /** The worker -> gateway half and its allocator, when shared memory is mapped. */
  private readonly outputs: { half: Buffer; ring: ShmRingAllocator } | undefined;
  private readonly shmStatus: SharedMemoryStatus | undefined;
  private readonly queue: DecodedFrame[] = [];
  private draining = false;
  private backend: Backend | undefined;
  private shutdownRequested = false;
  private exited = false;

  constructor(private readonly options: WorkerServerOptions) {
    const shm = options.sharedMemory;
    if (shm?.mapped === true) {
      const layout = sharedRegionLayout(shm.segment.length);
      const toWorker = shm.segment.subarray(layout.toWorker.offset, layout.toWorker.offset + layout.toWorker.byteLength);
      const toGateway = shm.segment.subarray(layout.toGateway.offset, layout.toGateway.offset + layout.toGateway.byteLength);
      this.decoder = new FrameDecoder({ sharedMemory: toWorker });
      this.outputs = { half: toGateway, ring: new ShmRingAllocator(toGateway.length) };
      this.shmStatus = { status: "mapped", byteLength: shm.segment.length };
    } else {
      this.decoder = new FrameDecoder();
      this.outputs = undefined;
      if (shm !== undefined) this.shmStatus = { status: "unavailable", reason: shm.reason };
    }
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
      backendApiVersion: BACKEND_API_VERSION,
      ...(this.shmStatus !== undefined ? { shm: this.shmStatus } : {}),
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
        this.releaseOutputs(frame.header.offsets);
        continue;
      }
      if (frame.header.type === "execute" && frame.header.release !== undefined) this.releaseOutputs(frame.header.release);
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
    if (this.backend !== undefined) {
      return this.send({ type: "error", requestId: message.requestId, kind: "ALREADY_EXISTS", message: "this worker already serves a model instance" });
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
        log: this.options.log,
      });
      this.backend = backend;
      const { inputs, outputs } = backend.metadata();
      this.options.log("info", "model instance loaded", { backend: message.backend, ms: Math.round(performance.now() - started) });
      return this.send({ type: "loaded", requestId: message.requestId, inputs, outputs });
    } catch (error) {
      const failure = asOperonError(error);
      this.options.log("error", "model instance failed to load", { kind: failure.kind, reason: failure.message });
      return this.send({ type: "error", requestId: message.requestId, kind: failure.kind, message: failure.message });
    }
  }

  private async execute(message: ExecuteMessage, inputs: Tensor[]): Promise<boolean> {
    try {
      if (this.backend === undefined) throw new OperonError("UNAVAILABLE", "no model instance is loaded in this worker");
      const { outputs, timing } = await this.backend.execute(inputs, message.outputNames);
      return this.send({ type: "result", requestId: message.requestId, timing }, outputs, this.placeOutputs(outputs));
    } catch (error) {
      const failure = asOperonError(error);
      if (failure.kind === "INTERNAL") this.options.log("error", "execute failed", { requestId: message.requestId, reason: failure.message });
      return this.send({ type: "error", requestId: message.requestId, kind: failure.kind, message: failure.message });
    }
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
    this.options.log("info", "shut down");
    // Exit only once every reply has been handed to the kernel.
    this.options.channel.end(() => this.exit(0));
  }

  /**
   * Copies each output that fits into this worker's shared half (one copy;
   * the gateway copies it out and releases it). Undefined entries go inline.
   */
  private placeOutputs(outputs: readonly Tensor[]): Array<number | undefined> {
    const shm = this.outputs;
    if (shm === undefined || this.exited) return [];
    return outputs.map((output) => {
      if (output.data.length < SHM_MIN_TENSOR_BYTES) return undefined;
      const offset = shm.ring.allocate(output.data.length);
      if (offset !== undefined) shm.half.set(output.data, offset);
      return offset;
    });
  }

  private releaseOutputs(offsets: unknown): void {
    if (!Array.isArray(offsets)) {
      this.options.log("error", "ignoring a malformed shared-memory release from the gateway", { offsets });
      return;
    }
    for (const offset of offsets as number[]) {
      try {
        if (this.outputs === undefined) throw new RangeError("no shared memory is mapped");
        this.outputs.ring.release(offset);
      } catch (error) {
        // The gateway's bookkeeping and ours disagree: that space stays in use, everything else goes on.
        this.options.log("error", "ignoring a bad shared-memory release from the gateway", { offset, reason: (error as Error).message });
      }
    }
  }

  private send(header: WorkerReplyMessage, tensors: readonly Tensor[] = [], shmOffsets: ReadonlyArray<number | undefined> = []): boolean {
    if (this.exited || this.options.channel.writableEnded) return true;
    try {
      return writeFrame(this.options.channel, header, tensors, shmOffsets);
    } catch (error) {
      // The gateway never learns of these offsets: take them back.
      for (const offset of shmOffsets) if (offset !== undefined) this.outputs?.ring.release(offset);
      // E.g. a result over the frame limit: report it instead of the result.
      if (header.type === "result" && tensors.length > 0) {
        const failure = asOperonError(error);
        return this.send({ type: "error", requestId: header.requestId, kind: failure.kind, message: failure.message });
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

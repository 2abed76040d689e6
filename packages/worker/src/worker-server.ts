import { once } from "node:events";
import type { Duplex } from "node:stream";
import { asOperonError, OperonError } from "@operon/protocol/errors";
import type { Tensor } from "@operon/protocol/tensor";
import {
  type DecodedFrame,
  type ExecuteMessage,
  type FrameSink,
  FrameDecoder,
  type LoadMessage,
  WORKER_WIRE_VERSION,
  type WorkerReplyMessage,
  writeFrame,
} from "@operon/protocol/worker-wire";
import { BACKEND_API_VERSION, type Backend, type BackendLog } from "./backends/backend.js";

export interface WorkerServerOptions {
  /** The byte stream to the gateway (fd 3 in a real worker). */
  channel: Duplex & FrameSink;
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
 */
export class WorkerServer {
  private readonly decoder = new FrameDecoder();
  private readonly queue: DecodedFrame[] = [];
  private draining = false;
  private backend: Backend | undefined;
  private shutdownRequested = false;
  private exited = false;

  constructor(private readonly options: WorkerServerOptions) {}

  start(): void {
    const { channel } = this.options;
    channel.on("data", (chunk: Buffer) => this.onData(chunk));
    // The gateway closed its end (or died): nobody can receive results any more.
    channel.on("end", () => this.exit(0, "gateway channel closed; exiting"));
    channel.on("error", (error: Error) => this.exit(0, `gateway channel failed (${error.message}); exiting`));
    this.send({ type: "ready", pid: process.pid, wireVersion: WORKER_WIRE_VERSION, backendApiVersion: BACKEND_API_VERSION });
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
    if (frames.length === 0) return;
    this.queue.push(...frames);
    if (!this.draining) void this.drain();
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
      return this.send({ type: "result", requestId: message.requestId, timing }, outputs);
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

  private send(header: WorkerReplyMessage, tensors: readonly Tensor[] = []): boolean {
    if (this.exited || this.options.channel.writableEnded) return true;
    try {
      return writeFrame(this.options.channel, header, tensors);
    } catch (error) {
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

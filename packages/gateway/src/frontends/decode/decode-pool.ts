import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { type ErrorKind, OperonError } from "@operon/protocol/errors";
import type { DecodeTask } from "./decode-tasks.js";
import type { InferRequest } from "@operon/protocol/inference";
import { type PackedInferRequest, unpackInferRequest } from "./packed-request.js";

export type DecodeResult = { kind: "infer"; packed: PackedInferRequest; binaryDataOutput: boolean } | { kind: "json"; value: unknown };
export type DecodeReply = { id: number; ok: true; result: DecodeResult } | { id: number; ok: false; kind: ErrorKind; message: string };

export interface DecodePoolOptions {
  /** Threads; default 1 per 4 cores, at least 1, at most 4. */
  threads?: number;
  /** Heap of each thread (V8 old generation), MiB: a body whose decoding needs more fails alone with INVALID_ARG. Default 1024. */
  maxHeapMb?: number;
}

/** Bodies at least this large are decoded on the pool, not on the event loop. */
export const DECODE_OFF_LOOP_BYTES = 64 * 1024;

interface Job {
  resolve(result: DecodeResult): void;
  reject(error: OperonError): void;
}

interface Slot {
  worker: Worker;
  jobs: Map<number, Job>;
}

/**
 * Threads that decode large request bodies (JSON parse, protobuf decode,
 * tensor conversion) off the gateway's event loop, so one huge request
 * never delays the others. Each thread has a capped heap: a body that
 * would need more kills only its thread (its requests fail with
 * INVALID_ARG, the thread is replaced). Bodies travel transferred, never
 * copied, when the caller owns them (see decode()).
 */
export class DecodePool {
  private readonly slots: Array<Slot | undefined>;
  private readonly maxHeapMb: number;
  private nextId = 1;
  private closed = false;

  constructor(options: DecodePoolOptions = {}) {
    const threads = options.threads ?? Math.min(4, Math.max(1, Math.floor(availableParallelism() / 4)));
    this.slots = new Array(threads).fill(undefined);
    this.maxHeapMb = options.maxHeapMb ?? 1024;
  }

  /**
   * Runs a task on the least busy thread. `owned`: nothing else uses the
   * ArrayBuffer under the task's bytes (a body read into its own buffer, a
   * gRPC message grpc-js assembled from several frames), so the whole buffer
   * moves to the thread, the view's offset with it. Otherwise the bytes are
   * copied first: a Buffer of Node's shared pool must never move.
   */
  private decode(task: DecodeTask, owned: boolean): Promise<DecodeResult> {
    if (this.closed) return Promise.reject(new OperonError("UNAVAILABLE", "the server is shutting down"));
    const bytes = task.kind === "grpc-infer" ? task.message : task.body;
    // Node's pool serves allocations under 4 KiB only; anything this large has a buffer of its own.
    const movable = owned && bytes.byteLength >= DECODE_OFF_LOOP_BYTES && !(bytes.buffer instanceof SharedArrayBuffer);
    const sent = movable ? bytes : new Uint8Array(bytes);
    const shipped: DecodeTask = task.kind === "grpc-infer" ? { ...task, message: sent } : { ...task, body: sent };
    const slot = this.leastBusy();
    const id = this.nextId++;
    return new Promise<DecodeResult>((resolve, reject) => {
      slot.jobs.set(id, { resolve, reject });
      slot.worker.postMessage({ id, task: shipped }, [sent.buffer as ArrayBuffer]);
    });
  }

  /** A JSON body's value. */
  async decodeJson(body: Uint8Array, owned: boolean): Promise<unknown> {
    const result = await this.decode({ kind: "json", body }, owned);
    if (result.kind !== "json") throw new OperonError("INTERNAL", "the decoder answered a JSON body with something else");
    return result.value;
  }

  /** An inference request (HTTP /infer body or gRPC ModelInfer message), its tensors as views of the buffer that came back. */
  async decodeInfer(task: Extract<DecodeTask, { kind: "http-infer" | "grpc-infer" }>, owned: boolean): Promise<{ request: InferRequest; binaryDataOutput: boolean }> {
    const result = await this.decode(task, owned);
    if (result.kind !== "infer") throw new OperonError("INTERNAL", "the decoder answered an inference request with something else");
    return { request: unpackInferRequest(result.packed), binaryDataOutput: result.binaryDataOutput };
  }

  /** Ends the threads; pending decodes fail UNAVAILABLE. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((slot) => slot?.worker.terminate()));
  }

  private leastBusy(): Slot {
    let best: Slot | undefined;
    for (let i = 0; i < this.slots.length; i += 1) {
      const slot = this.slots[i] ?? (this.slots[i] = this.spawn(i));
      if (best === undefined || slot.jobs.size < best.jobs.size) best = slot;
    }
    return best!;
  }

  private spawn(index: number): Slot {
    const worker = new Worker(decodeThreadEntry(), { resourceLimits: { maxOldGenerationSizeMb: this.maxHeapMb } });
    worker.unref();
    const slot: Slot = { worker, jobs: new Map() };
    worker.on("message", (reply: DecodeReply) => {
      const job = slot.jobs.get(reply.id);
      if (job === undefined) return;
      slot.jobs.delete(reply.id);
      if (reply.ok) job.resolve(reply.result);
      else job.reject(new OperonError(reply.kind, reply.message));
    });
    let failure: OperonError | undefined;
    worker.on("error", (error: Error & { code?: string }) => {
      failure =
        error.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? new OperonError("INVALID_ARG", `the request is too large or too complex to decode within the decoder's ${this.maxHeapMb} MiB of memory`)
          : new OperonError("INTERNAL", `the request decoder failed: ${error.message}`);
    });
    worker.on("exit", () => {
      if (this.slots[index] === slot) this.slots[index] = undefined;
      const error = failure ?? new OperonError("UNAVAILABLE", "the request decoder stopped");
      for (const job of slot.jobs.values()) job.reject(error);
      slot.jobs.clear();
    });
    return slot;
  }
}

/** The thread's entry: dist/…/decode-thread.js beside this module (from src/, when tests run the TypeScript, the built copy). */
function decodeThreadEntry(): URL {
  const here = import.meta.url;
  return here.endsWith(".ts") ? new URL("../../../dist/frontends/decode/decode-thread.js", here) : new URL("./decode-thread.js", here);
}

import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { type ErrorKind, OperonError } from "@operon/protocol/errors";
import type { DecodeTask } from "./decode-tasks.js";
import type { InferRequest } from "@operon/protocol/inference";
import { type PackedInferRequest, unpackInferRequest } from "./packed-request.js";

export type DecodeResult =
  | { kind: "infer"; packed: PackedInferRequest; binaryDataOutput: boolean }
  | { kind: "json"; value: unknown };
export type DecodeReply =
  | { id: number; ok: true; result: DecodeResult }
  | { id: number; ok: false; kind: ErrorKind; message: string };

export interface DecodePoolOptions {
  /** Threads; default DEFAULT_DECODE_THREADS (1 per 4 cores, at least 2, at most 4). */
  threads?: number;
  /** Heap of each thread (V8 old generation), MiB: a body whose decoding needs more fails alone with INVALID_ARG. Default 1024. */
  maxHeapMb?: number;
  /** Longest one body may take to decode, ms: beyond it its thread is replaced and it fails alone with INVALID_ARG. Default 10 s. */
  maxDecodeMs?: number;
  /** Bodies waiting for a thread, at most (beyond: UNAVAILABLE at once). Default 64. */
  maxQueuedBodies?: number;
  /** Bytes of bodies waiting for a thread, at most (beyond: UNAVAILABLE at once). Default 512 MiB. */
  maxQueuedBytes?: number;
  /** The thread's script; tests only (default the built decode-thread.js). */
  threadEntry?: URL;
}

/** What a decode thread posts once its modules are loaded: a body's time limit runs from then, not from its start. */
export interface DecodeThreadReady {
  ready: true;
}

/** Bodies at least this large are decoded on the pool, not on the event loop. */
export const DECODE_OFF_LOOP_BYTES = 64 * 1024;

/**
 * Two threads at least, even on a small host: with one, a single body slow
 * to decode held up every other client's large request behind it.
 */
export const DEFAULT_DECODE_THREADS = Math.min(4, Math.max(2, Math.floor(availableParallelism() / 4)));
export const DEFAULT_MAX_DECODE_MS = 10_000;
export const DEFAULT_MAX_QUEUED_BODIES = 64;
export const DEFAULT_MAX_QUEUED_BYTES = 512 * 1024 * 1024;

interface Job {
  id: number;
  task: DecodeTask;
  /** The ArrayBuffer that moves to the thread with the task. */
  transfer: ArrayBuffer;
  bytes: number;
  resolve(result: DecodeResult): void;
  reject(error: OperonError): void;
}

interface Slot {
  worker: Worker;
  /** The one job this thread is decoding; undefined = idle. */
  busy: Job | undefined;
  timer: NodeJS.Timeout | undefined;
  /** Why the thread is going away, once known (out of memory, over time). */
  failure: OperonError | undefined;
  /** The thread has loaded its modules (DecodeThreadReady); a fresh thread's first body waits for it unclocked. */
  ready: boolean;
}

/**
 * Threads that decode large request bodies (JSON parse, protobuf decode,
 * tensor conversion) off the gateway's event loop, so one huge request
 * never delays the others.
 *
 * One queue on the gateway's side feeds every thread, one body per thread
 * at a time: a body waits only for a free thread, never behind a slow body
 * on a busy one, and the pool always knows which body a thread is on. So
 * when a thread dies (its heap ran out, or a body passed maxDecodeMs and
 * the thread was stopped) exactly that body fails, with INVALID_ARG naming
 * the limit; the bodies queued behind it were never sent and go to the
 * replacement thread. The queue is bounded in bodies and bytes: beyond it a
 * body is refused at once with UNAVAILABLE (503 / UNAVAILABLE, retry).
 * Bodies travel transferred, never copied, when the caller owns them (see
 * decode()).
 */
export class DecodePool {
  private readonly slots: Array<Slot | undefined>;
  private readonly maxHeapMb: number;
  private readonly maxDecodeMs: number;
  private readonly maxQueuedBodies: number;
  private readonly maxQueuedBytes: number;
  private readonly queue: Job[] = [];
  private queuedBytes = 0;
  private nextId = 1;
  private closed = false;
  private readonly threadEntry: URL;

  constructor(options: DecodePoolOptions = {}) {
    this.slots = new Array(options.threads ?? DEFAULT_DECODE_THREADS).fill(undefined);
    this.maxHeapMb = options.maxHeapMb ?? 1024;
    this.maxDecodeMs = options.maxDecodeMs ?? DEFAULT_MAX_DECODE_MS;
    this.maxQueuedBodies = options.maxQueuedBodies ?? DEFAULT_MAX_QUEUED_BODIES;
    this.maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
    this.threadEntry = options.threadEntry ?? decodeThreadEntry();
  }

  /** Threads of the pool. */
  get threads(): number {
    return this.slots.length;
  }

  /** Bodies waiting for a thread (not counting those being decoded). */
  get queued(): number {
    return this.queue.length;
  }

  /**
   * Runs a task on the next free thread. `owned`: nothing else uses the
   * ArrayBuffer under the task's bytes (a body read into its own buffer, a
   * gRPC message grpc-js assembled from several frames), so the whole buffer
   * moves to the thread, the view's offset with it. Otherwise the bytes are
   * copied first: a Buffer of Node's shared pool must never move.
   */
  private decode(task: DecodeTask, owned: boolean): Promise<DecodeResult> {
    if (this.closed) return Promise.reject(new OperonError("UNAVAILABLE", "the server is shutting down"));
    const bytes = task.kind === "grpc-infer" ? task.message : task.body;
    if (
      this.queue.length >= this.maxQueuedBodies ||
      (this.queue.length > 0 && this.queuedBytes + bytes.byteLength > this.maxQueuedBytes)
    ) {
      if (this.idleSlot() === undefined) {
        return Promise.reject(
          new OperonError(
            "UNAVAILABLE",
            `the request decoder is busy: ${this.queue.length} bodies (${this.queuedBytes} bytes) wait for its ${this.slots.length} threads already; retry shortly`,
          ),
        );
      }
    }
    // Node's pool serves allocations under 4 KiB only; anything this large has a buffer of its own.
    const movable = owned && bytes.byteLength >= DECODE_OFF_LOOP_BYTES && !(bytes.buffer instanceof SharedArrayBuffer);
    const sent = movable ? bytes : new Uint8Array(bytes);
    const shipped: DecodeTask = task.kind === "grpc-infer" ? { ...task, message: sent } : { ...task, body: sent };
    return new Promise<DecodeResult>((resolve, reject) => {
      this.queue.push({
        id: this.nextId++,
        task: shipped,
        transfer: sent.buffer as ArrayBuffer,
        bytes: sent.byteLength,
        resolve,
        reject,
      });
      this.queuedBytes += sent.byteLength;
      this.dispatch();
    });
  }

  /** A JSON body's value. */
  async decodeJson(body: Uint8Array, owned: boolean): Promise<unknown> {
    const result = await this.decode({ kind: "json", body }, owned);
    if (result.kind !== "json")
      throw new OperonError("INTERNAL", "the decoder answered a JSON body with something else");
    return result.value;
  }

  /** An inference request (HTTP /infer body or gRPC ModelInfer message), its tensors as views of the buffer that came back. */
  async decodeInfer(
    task: Extract<DecodeTask, { kind: "http-infer" | "grpc-infer" }>,
    owned: boolean,
  ): Promise<{ request: InferRequest; binaryDataOutput: boolean }> {
    const result = await this.decode(task, owned);
    if (result.kind !== "infer")
      throw new OperonError("INTERNAL", "the decoder answered an inference request with something else");
    return { request: unpackInferRequest(result.packed), binaryDataOutput: result.binaryDataOutput };
  }

  /** Ends the threads; queued and running decodes fail UNAVAILABLE. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const stopping = new OperonError("UNAVAILABLE", "the server is shutting down");
    for (const job of this.queue.splice(0)) job.reject(stopping);
    this.queuedBytes = 0;
    await Promise.all(this.slots.map((slot) => slot?.worker.terminate()));
  }

  /** Hands queued bodies to idle threads (starting threads as needed). */
  private dispatch(): void {
    while (this.queue.length > 0 && !this.closed) {
      const index = this.idleSlot();
      if (index === undefined) return;
      const slot = this.slots[index] ?? (this.slots[index] = this.spawn(index));
      const job = this.queue.shift()!;
      this.queuedBytes -= job.bytes;
      slot.busy = job;
      // A thread still starting (a replacement after a kill, on a loaded host) gets the body now and the clock
      // once it is ready: its start-up is not the body's time.
      if (slot.ready) this.startClock(slot);
      slot.worker.postMessage({ id: job.id, task: job.task }, [job.transfer]);
    }
  }

  /** The busy body's time limit: past it, its thread is stopped and it alone fails. */
  private startClock(slot: Slot): void {
    slot.timer = setTimeout(() => {
      slot.failure = new OperonError(
        "INVALID_ARG",
        `the request took longer than ${this.maxDecodeMs / 1000} s to decode, the decoder's limit per body; send a smaller or simpler request`,
      );
      void slot.worker.terminate();
    }, this.maxDecodeMs);
    slot.timer.unref();
  }

  /** A slot whose thread is idle or not started; undefined when every thread is busy. */
  private idleSlot(): number | undefined {
    for (let i = 0; i < this.slots.length; i += 1) {
      const slot = this.slots[i];
      if (slot === undefined || (slot.busy === undefined && slot.failure === undefined)) return i;
    }
    return undefined;
  }

  private spawn(index: number): Slot {
    const worker = new Worker(this.threadEntry, {
      resourceLimits: { maxOldGenerationSizeMb: this.maxHeapMb },
      workerData: { maxHeapMb: this.maxHeapMb },
    });
    worker.unref();
    const slot: Slot = { worker, busy: undefined, timer: undefined, failure: undefined, ready: false };
    const finish = (): Job | undefined => {
      const job = slot.busy;
      slot.busy = undefined;
      if (slot.timer !== undefined) clearTimeout(slot.timer);
      slot.timer = undefined;
      return job;
    };
    worker.on("message", (reply: DecodeReply | DecodeThreadReady) => {
      if ("ready" in reply) {
        slot.ready = true;
        if (slot.busy !== undefined && slot.timer === undefined) this.startClock(slot);
        return;
      }
      if (slot.busy?.id !== reply.id) return;
      const job = finish()!;
      if (reply.ok) job.resolve(reply.result);
      else job.reject(new OperonError(reply.kind, reply.message));
      this.dispatch();
    });
    worker.on("error", (error: Error & { code?: string }) => {
      slot.failure ??=
        error.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? new OperonError(
              "INVALID_ARG",
              `the request is too large or too complex to decode within the decoder's ${this.maxHeapMb} MiB of memory`,
            )
          : new OperonError("INTERNAL", `the request decoder failed: ${error.message}`);
    });
    worker.on("exit", () => {
      if (this.slots[index] === slot) this.slots[index] = undefined;
      // Only the body this thread was on fails; the queue goes on to a new thread.
      finish()?.reject(
        this.closed
          ? new OperonError("UNAVAILABLE", "the server is shutting down")
          : (slot.failure ?? new OperonError("UNAVAILABLE", "the request decoder stopped")),
      );
      this.dispatch();
    });
    return slot;
  }
}

/** The thread's entry: dist/…/decode-thread.js beside this module (from src/, when tests run the TypeScript, the built copy). */
function decodeThreadEntry(): URL {
  const here = import.meta.url;
  return here.endsWith(".ts")
    ? new URL("../../../dist/frontends/decode/decode-thread.js", here)
    : new URL("./decode-thread.js", here);
}

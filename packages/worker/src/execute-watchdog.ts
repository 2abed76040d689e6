import { once } from "node:events";
import { Worker } from "node:worker_threads";
import type { ExecuteGuard, ExecuteGuardOptions } from "@operon/backend-api/backend";

/**
 * The execute hang guard (see ExecuteGuard in @operon/backend-api/backend) as a
 * worker thread. The main thread and the guard share a small
 * SharedArrayBuffer, so arming and disarming cost two atomic writes and no
 * message: the thread sleeps in Atomics.wait until the sequence number
 * changes or the deadline passes, which works however stuck the main
 * thread's event loop is.
 *
 * When it fires it writes one error frame per armed request straight to
 * the channel's file descriptor (the main thread cannot: it is stuck), one
 * log line to stderr, and SIGKILLs the process. The frames are skipped when
 * the main thread may have left a frame half-written in its socket buffer
 * (markUnclean): a frame spliced into another would corrupt the stream; the
 * gateway then only sees the exit, and the log line still says why.
 */

export interface ExecuteWatchdogOptions extends ExecuteGuardOptions {
  /** The gateway channel's fd (3 in a real worker); undefined = log and kill only. */
  channelFd?: number;
  /** For the log line. */
  instance: string;
  /** True when the main thread's channel has nothing buffered (every frame it wrote is fully in the kernel). */
  channelIdle: () => boolean;
  /** Called once by close(). */
  onClose?: () => void;
  /** The guard thread failed after start-up: executes are unguarded from then on. */
  onError?: (error: Error) => void;
}

// Int32 slots.
const SEQ = 0; // even: idle; odd: armed; -1: closed
const COUNT = 1; // armed request ids
const CLEAN = 2; // 1: the guard may write frames to the channel
const SLEEP = 3; // never written: the thread waits on it to sleep
// Float64 slots (byte offset 16 on).
const DEADLINE = 2; // Date.now() ms
const IDS = 3;
/** Requests of one execute the guard can name; a larger batch still gets the kill, its tail no frames. */
const MAX_IDS = 1024;

/**
 * The thread, as plain JS (it runs in an eval worker: no module resolution,
 * no build step). Its frame encoding is the worker wire's header-only frame:
 * [u32 LE frameLength][u32 LE headerLength][header JSON, space-padded to 8].
 */
const THREAD_SOURCE = String.raw`
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const { sab, channelFd, message, decoupled, instance, timeoutMs } = workerData;
const i32 = new Int32Array(sab);
const f64 = new Float64Array(sab);
const SEQ = ${SEQ}, COUNT = ${COUNT}, CLEAN = ${CLEAN}, SLEEP = ${SLEEP}, DEADLINE = ${DEADLINE}, IDS = ${IDS};

function frame(requestId) {
  const header = decoupled
    ? { type: "response-error", requestId, final: true, kind: "UNAVAILABLE", message, tensors: [] }
    : { type: "error", requestId, kind: "UNAVAILABLE", message, tensors: [] };
  const json = Buffer.from(JSON.stringify(header), "utf8");
  const headerLength = json.length + ((8 - ((8 + json.length) % 8)) % 8);
  const bytes = Buffer.alloc(8 + headerLength, 0x20);
  bytes.writeUInt32LE(4 + headerLength, 0);
  bytes.writeUInt32LE(headerLength, 4);
  json.copy(bytes, 8);
  return bytes;
}

function writeAll(fd, bytes) {
  // The channel is non-blocking: retry EAGAIN for up to 2 s, then give up (the kill still follows).
  let offset = 0;
  const giveUpAt = Date.now() + 2000;
  while (offset < bytes.length) {
    try {
      offset += fs.writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      if (error.code !== "EAGAIN" || Date.now() > giveUpAt) return false;
      Atomics.wait(i32, SLEEP, 0, 5);
    }
  }
  return true;
}

function fire() {
  const ids = [];
  for (let i = 0; i < Atomics.load(i32, COUNT); i += 1) ids.push(f64[IDS + i]);
  let framed = false;
  if (channelFd !== undefined && Atomics.load(i32, CLEAN) === 1) {
    framed = ids.every((id) => writeAll(channelFd, frame(id)));
  }
  const line = {
    time: new Date().toISOString(),
    level: "error",
    instance,
    pid: process.pid,
    msg: message + "; killing the worker process (a running model cannot be interrupted)",
    // Wire ids (the gateway's per-worker numbers); the gateway's failure lines for these requests carry their X-Request-Id.
    wireRequestIds: ids,
    timeoutMs,
    reported: framed,
  };
  try {
    fs.writeSync(2, JSON.stringify(line) + "\n");
  } catch {}
  process.kill(process.pid, "SIGKILL");
}

parentPort.postMessage("ready");
for (;;) {
  const seq = Atomics.load(i32, SEQ);
  if (seq < 0) break;
  if (seq % 2 === 0) {
    Atomics.wait(i32, SEQ, seq);
    continue;
  }
  const remaining = f64[DEADLINE] - Date.now();
  if (remaining > 0) {
    Atomics.wait(i32, SEQ, seq, remaining);
    continue;
  }
  if (Atomics.load(i32, SEQ) === seq) fire();
}
`;

export class ExecuteWatchdog implements ExecuteGuard {
  private readonly i32: Int32Array;
  private readonly f64: Float64Array;
  private closed = false;
  private armed = false;

  private constructor(
    private readonly thread: Worker,
    sab: SharedArrayBuffer,
    private readonly options: ExecuteWatchdogOptions,
  ) {
    this.i32 = new Int32Array(sab);
    this.f64 = new Float64Array(sab);
  }

  /** Starts the guard thread; resolves once it runs (so even a model that hangs at once is caught). */
  static async start(options: ExecuteWatchdogOptions): Promise<ExecuteWatchdog> {
    const sab = new SharedArrayBuffer(8 * (IDS + MAX_IDS));
    const thread = new Worker(THREAD_SOURCE, {
      eval: true,
      // Not the process's flags: e.g. --input-type=module would make this script an ES module without require().
      execArgv: [],
      workerData: {
        sab,
        channelFd: options.channelFd,
        message: options.message,
        decoupled: options.decoupled,
        instance: options.instance,
        timeoutMs: options.timeoutMs,
      },
    });
    // "ready" comes from inside the loop's script: the guard really runs (an 'error' rejects this instead).
    await once(thread, "message");
    thread.on("error", (error: Error) => options.onError?.(error));
    // Past start-up, the guard never keeps the worker process alive on its own.
    thread.unref();
    return new ExecuteWatchdog(thread, sab, options);
  }

  arm(requestIds: readonly number[]): () => void {
    // Executes are one at a time; a nested call stays covered by the deadline already armed.
    if (this.closed || this.armed) return () => undefined;
    const count = Math.min(requestIds.length, MAX_IDS);
    for (let i = 0; i < count; i += 1) this.f64[IDS + i] = requestIds[i]!;
    Atomics.store(this.i32, COUNT, count);
    Atomics.store(this.i32, CLEAN, this.options.channelIdle() ? 1 : 0);
    this.f64[DEADLINE] = Date.now() + this.options.timeoutMs;
    this.armed = true;
    this.bump();
    let disarmed = false;
    return () => {
      if (disarmed || this.closed) return;
      disarmed = true;
      this.armed = false;
      this.bump();
    };
  }

  /** The main thread left bytes in its socket buffer: the guard must not write frames this execute. */
  markUnclean(): void {
    if (this.armed) Atomics.store(this.i32, CLEAN, 0);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.options.onClose?.();
    Atomics.store(this.i32, SEQ, -1);
    Atomics.notify(this.i32, SEQ);
    void this.thread.terminate();
  }

  private bump(): void {
    Atomics.add(this.i32, SEQ, 1);
    Atomics.notify(this.i32, SEQ);
  }
}

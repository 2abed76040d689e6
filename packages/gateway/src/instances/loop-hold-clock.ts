import { openSync, readSync } from "node:fs";

/**
 * How long a piece of work on the event loop held it, in ns, by one of two clocks:
 *
 * - "wall": its wall time. Cheap (one hrtime read at each end), but on a loaded host the OS preempts the
 *   gateway's thread in the middle of a run, and the wall time then counts milliseconds in which other
 *   processes ran: a 30 µs run reads as 10 ms.
 * - "checked": the wall time, and whether the thread was switched out during the span (`preempted`): a
 *   reading of a span in which it never was is the time the work held the loop. The switch count is Linux's per-thread schedstat (its third field,
 *   counted at every switch-in, exact; the CPU-time field beside it is updated only at scheduler ticks, too
 *   coarse for microseconds, and the process's CPU time counts every other thread, busy exactly when the
 *   host is). Dearer: a read of /proc at each end (a few µs, as much as a tiny model's run), so it is for
 *   checking a suspicion the wall clock raised, or timing a probe, not for every execution. Where schedstat
 *   cannot be read, `preempted` is undefined.
 *
 * The clock must be read on the thread whose loop it times: the gateway's main thread (inline instances and
 * their probes run there).
 */
export type LoopHoldClock = "wall" | "checked";

/** One span's reading: its wall time, and by the "checked" clock whether the thread left the CPU in it. */
export interface LoopHold {
  ns: number;
  /** true: switched out (the wall time counts others' work too); false: it ran throughout; undefined: not known. */
  preempted: boolean | undefined;
}

/**
 * Starts timing a span; the returned function ends it. `checkOverNs`: the "checked" clock reads the switch count
 * at the end only for a span longer than this, and a shorter one answers `preempted` undefined. A caller that
 * only asks whether a long span was the work's own (adaptive-instance.ts) pays one /proc read per span, not
 * two: each costs 2-3 µs, as much as a tiny model's run.
 */
export function startLoopHoldClock(clock: LoopHoldClock, checkOverNs = 0): () => LoopHold {
  const switches = clock === "checked" ? switchCounter() : undefined;
  const switchesAtStart = switches?.();
  const wallStart = process.hrtime.bigint();
  return () => {
    const ns = Number(process.hrtime.bigint() - wallStart);
    if (switches === undefined || ns <= checkOverNs) return { ns, preempted: undefined };
    return { ns, preempted: switches() !== switchesAtStart };
  };
}

let counter: (() => number) | null | undefined;

/** How often the calling thread was switched in so far; undefined where schedstat cannot be read. */
function switchCounter(): (() => number) | undefined {
  if (counter === undefined) counter = openSchedstat();
  return counter ?? undefined;
}

function openSchedstat(): (() => number) | null {
  try {
    const fd = openSync("/proc/thread-self/schedstat", "r");
    const buffer = Buffer.alloc(96);
    // procfs regenerates the file on every read from offset 0: "<ns on cpu> <ns waiting> <switch-ins>".
    const read = (): number => thirdField(buffer, readSync(fd, buffer, 0, buffer.length, 0));
    return Number.isFinite(read()) ? read : null;
  } catch {
    return null;
  }
}

const SPACE = 0x20;
const DIGIT_0 = 0x30;

/**
 * The third space-separated field of `bytes[0, length)` as a number (NaN when it is not digits): read from the
 * bytes, since a string, a trim and a split per read cost a third of the read.
 */
export function thirdField(bytes: Uint8Array, length: number): number {
  let at = 0;
  for (let spaces = 0; at < length && spaces < 2; at += 1) if (bytes[at] === SPACE) spaces += 1;
  let value = 0;
  let digits = 0;
  for (; at < length; at += 1, digits += 1) {
    const digit = bytes[at]! - DIGIT_0;
    if (digit < 0 || digit > 9) break;
    value = value * 10 + digit;
  }
  return digits > 0 ? value : NaN;
}

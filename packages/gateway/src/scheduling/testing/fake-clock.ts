import type { TimerClock } from "../deadline-timer.js";

/**
 * A TimerClock for tests: time moves only when the test says so, and
 * "event-loop turns" run only on turn(). Timeouts fire when advance()
 * passes them (Node's rounding up to whole milliseconds included).
 */
export class FakeClock implements TimerClock {
  private timeNs = 0n;
  private nextHandle = 1;
  private readonly timeouts = new Map<number, { at: bigint; callback: () => void }>();
  private immediates = new Map<number, () => void>();
  /** setTimeout delays asked for, in ms (to show what would have been slept). */
  readonly timeoutsAsked: number[] = [];

  now(): bigint {
    return this.timeNs;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const handle = this.nextHandle++;
    this.timeoutsAsked.push(ms);
    // Node waits at least 1 ms, in whole milliseconds.
    this.timeouts.set(handle, { at: this.timeNs + BigInt(Math.max(1, Math.ceil(ms))) * 1_000_000n, callback });
    return handle;
  }

  clearTimeout(handle: unknown): void {
    this.timeouts.delete(handle as number);
  }

  setImmediate(callback: () => void): unknown {
    const handle = this.nextHandle++;
    this.immediates.set(handle, callback);
    return handle;
  }

  clearImmediate(handle: unknown): void {
    this.immediates.delete(handle as number);
  }

  /** One event-loop turn: runs the immediates queued before it (not those they queue). */
  turn(): void {
    const batch = this.immediates;
    this.immediates = new Map();
    for (const callback of batch.values()) callback();
  }

  /** Moves time forward by ns, firing due timeouts in order, then runs one turn. */
  advance(ns: bigint | number): void {
    const target = this.timeNs + BigInt(ns);
    for (;;) {
      let next: [number, { at: bigint; callback: () => void }] | undefined;
      for (const entry of this.timeouts)
        if (entry[1].at <= target && (next === undefined || entry[1].at < next[1].at)) next = entry;
      if (next === undefined) break;
      this.timeouts.delete(next[0]);
      this.timeNs = next[1].at;
      next[1].callback();
    }
    this.timeNs = target;
    this.turn();
  }

  get pendingImmediates(): number {
    return this.immediates.size;
  }
}

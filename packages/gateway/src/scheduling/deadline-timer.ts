/**
 * The clock and timers a DeadlineTimer uses; process time by default, a
 * fake in tests.
 */
export interface TimerClock {
  /** Monotonic nanoseconds (process.hrtime.bigint()). */
  now(): bigint;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  setImmediate(callback: () => void): unknown;
  clearImmediate(handle: unknown): void;
}

export const PROCESS_CLOCK: TimerClock = {
  now: () => process.hrtime.bigint(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  setImmediate: (callback) => setImmediate(callback),
  clearImmediate: (handle) => clearImmediate(handle as NodeJS.Immediate),
};

/** Below this much time left, the timer checks on every event-loop turn instead of sleeping. */
const SPIN_BELOW_NS = 1_500_000n;

/**
 * Fires a callback once a deadline (clock nanoseconds) has passed, at
 * microsecond resolution. Node's setTimeout cannot wait less than 1 ms (a
 * `max_queue_delay_microseconds: 100` became 1+ ms), so the last 1.5 ms are
 * waited by checking the clock on each event-loop turn (setImmediate): the
 * loop keeps polling I/O with a zero timeout meanwhile, so requests that
 * arrive are read at once; the cost is a busy core for at most that long.
 * Farther deadlines sleep in setTimeout until they are that close.
 *
 * One deadline at a time: arming an earlier one replaces it, a later one is
 * ignored (the owner re-arms after each firing).
 */
export class DeadlineTimer {
  private at: bigint | undefined;
  private timeout: unknown;
  private immediate: unknown;

  constructor(
    private readonly onDeadline: () => void,
    private readonly clock: TimerClock = PROCESS_CLOCK,
  ) {}

  /** The armed deadline, if any. */
  get deadline(): bigint | undefined {
    return this.at;
  }

  arm(at: bigint): void {
    if (this.at !== undefined && this.at <= at) return;
    this.clear();
    this.at = at;
    this.wait();
  }

  clear(): void {
    if (this.timeout !== undefined) this.clock.clearTimeout(this.timeout);
    if (this.immediate !== undefined) this.clock.clearImmediate(this.immediate);
    this.timeout = undefined;
    this.immediate = undefined;
    this.at = undefined;
  }

  private readonly check = (): void => {
    this.timeout = undefined;
    this.immediate = undefined;
    this.wait();
  };

  private wait(): void {
    const at = this.at;
    if (at === undefined) return;
    const left = at - this.clock.now();
    if (left <= 0n) {
      this.at = undefined;
      this.onDeadline();
      return;
    }
    if (left < SPIN_BELOW_NS) this.immediate = this.clock.setImmediate(this.check);
    // Wake 1 ms early: setTimeout fires late, never early, by up to a millisecond or so.
    else this.timeout = this.clock.setTimeout(this.check, Math.floor(Number(left - SPIN_BELOW_NS) / 1e6) + 0);
  }
}

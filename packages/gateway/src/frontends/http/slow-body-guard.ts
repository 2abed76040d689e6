import { type LiveEntry, LiveList } from "../live-list.js";
import { HttpStatusError } from "./http-errors.js";

/**
 * Cuts off request bodies that pause or trickle: seven connections that
 * declared 426 MB and sent 7 bytes used to hold the server's body budget
 * for minutes. A body fails with 408 (and its connection is closed) when no
 * byte of it arrived for `pauseMs`, or when, once `pauseMs` has passed since
 * it began, its average rate is below `minBytesPerSec`.
 *
 * One sweep a second over the bodies being read, not a timer per request:
 * most bodies arrive with their headers and are never looked at.
 */
export interface SlowBodyLimits {
  /** Longest pause between two pieces of a body, ms; also the grace before the rate applies. */
  pauseMs: number;
  /** Slowest average rate after the grace, bytes per second; 0 = none. */
  minBytesPerSec: number;
}

export interface BodyWatch {
  /** Bytes arrived. */
  progress(bytes: number): void;
  /** The body is read (or failed); stop watching. */
  done(): void;
}

/** What a watched body is told when it is too slow (once; then it is no longer watched). */
export interface SlowBodyTarget {
  failSlowBody(error: HttpStatusError): void;
}

/** One watched body: its own BodyWatch (no closures per body: this runs for every request with a body). */
class Watched implements BodyWatch {
  readonly startedAt: number;
  lastAt: number;
  bytes = 0;
  /** Its place in the guard's list. */
  readonly listed: LiveEntry<Watched>;

  constructor(
    private readonly list: LiveList<Watched>,
    readonly target: SlowBodyTarget,
  ) {
    this.startedAt = this.lastAt = Date.now();
    this.listed = list.add(this);
  }

  progress(bytes: number): void {
    this.bytes += bytes;
    this.lastAt = Date.now();
  }

  done(): void {
    this.list.remove(this.listed);
  }
}

const SWEEP_MS = 1000;

export class SlowBodyGuard {
  // Not a Set: one add and one delete per request (../live-list.ts says why).
  private readonly watched = new LiveList<Watched>();
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly limits: SlowBodyLimits) {}

  /** Watches one body; its target is told once if it is too slow (then it is no longer watched). */
  watch(target: SlowBodyTarget): BodyWatch {
    const entry = new Watched(this.watched, target);
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.sweep(), SWEEP_MS);
      this.timer.unref();
    }
    return entry;
  }

  /** Bodies being watched (for tests). */
  get size(): number {
    return this.watched.size;
  }

  private sweep(): void {
    const now = Date.now();
    const { pauseMs, minBytesPerSec } = this.limits;
    for (const entry of this.watched) {
      const elapsed = now - entry.startedAt;
      let problem: string | undefined;
      if (now - entry.lastAt > pauseMs) {
        problem = `no byte of the request body arrived for ${Math.round((now - entry.lastAt) / 1000)} s (--http-body-timeout-secs ${pauseMs / 1000})`;
      } else if (minBytesPerSec > 0 && elapsed > pauseMs && (entry.bytes * 1000) / elapsed < minBytesPerSec) {
        problem = `the request body arrives at ${Math.round((entry.bytes * 1000) / elapsed)} bytes/s, below the minimum of ${minBytesPerSec} (--http-min-body-bytes-per-sec)`;
      }
      if (problem === undefined) continue;
      entry.done();
      entry.target.failSlowBody(
        new HttpStatusError(408, `${problem}; the connection is closed`, { closeConnection: true }),
      );
    }
    if (this.watched.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Stops the sweep (bodies still watched are left alone). */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.watched.clear();
  }
}

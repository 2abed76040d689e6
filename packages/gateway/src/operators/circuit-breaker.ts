/**
 * A circuit breaker for one operator step, shared by every request of the
 * operator. Closed: calls go through; `failureThreshold` failures within
 * the last `windowMs` open it. Open: calls are rejected without reaching
 * the model; after `openMs` it turns half-open. Half-open: up to
 * `halfOpenProbes` calls go through at once as probes; a probe's success
 * closes it (forgetting past failures), a probe's failure opens it again.
 *
 * Callers take a ticket with admit() and hand it back exactly once:
 * succeeded(), failed(), or abandoned() (cancelled: says nothing of the
 * model's health, frees a probe slot).
 */
export type BreakerState = "closed" | "open" | "half-open";

export interface BreakerSettings {
  failureThreshold: number;
  windowMs: number;
  openMs: number;
  halfOpenProbes: number;
}

export type BreakerTicket = "call" | "probe";

export class CircuitBreaker {
  private current: BreakerState = "closed";
  /** Failure times (ms) within the window, oldest first; only while closed. */
  private failures: number[] = [];
  private openedAt = 0;
  private probes = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  constructor(
    readonly settings: BreakerSettings,
    private readonly options: { now?: () => number; onState?: (state: BreakerState) => void } = {},
  ) {
    this.now = options.now ?? (() => performance.now());
  }

  get state(): BreakerState {
    if (this.current === "open" && this.now() - this.openedAt >= this.settings.openMs) this.enter("half-open");
    return this.current;
  }

  admit(): BreakerTicket | "rejected" {
    const state = this.state;
    if (state === "closed") return "call";
    if (state === "open" || this.probes >= this.settings.halfOpenProbes) return "rejected";
    this.probes += 1;
    return "probe";
  }

  succeeded(ticket: BreakerTicket): void {
    if (ticket === "probe") {
      this.probes -= 1;
      if (this.current === "half-open") this.enter("closed");
    }
  }

  failed(ticket: BreakerTicket): void {
    if (ticket === "probe") {
      this.probes -= 1;
      if (this.current === "half-open") this.open();
      return;
    }
    if (this.current !== "closed") return; // a call admitted before the breaker opened
    const now = this.now();
    this.failures.push(now);
    while (this.failures.length > 0 && now - this.failures[0]! > this.settings.windowMs) this.failures.shift();
    if (this.failures.length >= this.settings.failureThreshold) this.open();
  }

  abandoned(ticket: BreakerTicket): void {
    if (ticket === "probe") this.probes -= 1;
  }

  /** Stops the half-open timer (the operator is going away). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private open(): void {
    this.openedAt = this.now();
    this.enter("open");
    // The state also turns half-open without a call, so /metrics shows it when it happens.
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.current === "open") this.enter("half-open");
    }, this.settings.openMs);
    this.timer.unref();
  }

  private enter(state: BreakerState): void {
    if (state === "closed") this.failures = [];
    if (state !== "open") {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.current === state) return;
    this.current = state;
    this.options.onState?.(state);
  }
}

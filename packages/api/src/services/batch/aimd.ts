/**
 * Adaptive concurrency for a batch job (additive increase, multiplicative
 * decrease, as TCP's congestion control): every window the job's request
 * latencies are compared with the latency budget. Within it, one more
 * request in flight; over it, or when a request is refused as overloaded,
 * the limit is cut by `decrease`. A job's requests run at the lowest
 * priority, so online traffic that rises makes them wait, their latency
 * crosses the budget, and the job backs off; when online traffic falls,
 * its latency drops and the job fills the valley.
 */
export interface AimdOptions {
  /** The latency (ms) a job's request may take at its p90 before the job backs off. */
  budgetMs: number;
  min?: number;
  max?: number;
  /** The multiplier on a backoff (0..1). Default 0.5. */
  decrease?: number;
  /** Requests a window needs before it counts. Default 8. */
  windowRequests?: number;
  /** The starting limit. Default 1. */
  initial?: number;
}

export class AimdLimiter {
  private limitValue: number;
  private samples: number[] = [];
  private overloaded = false;
  readonly min: number;
  readonly max: number;
  private readonly decrease: number;
  private readonly windowRequests: number;

  constructor(private readonly options: AimdOptions) {
    this.min = options.min ?? 1;
    this.max = options.max ?? 64;
    this.decrease = options.decrease ?? 0.5;
    this.windowRequests = options.windowRequests ?? 8;
    this.limitValue = Math.min(this.max, Math.max(this.min, options.initial ?? 1));
  }

  /** The requests the job may have in flight now. */
  get limit(): number {
    return Math.floor(this.limitValue);
  }

  get budgetMs(): number {
    return this.options.budgetMs;
  }

  /** A finished request's latency (ms); `overloaded`: the gateway refused it as busy (429/503). */
  record(latencyMs: number, overloaded = false): void {
    this.samples.push(latencyMs);
    if (overloaded) this.overloaded = true;
    if (this.samples.length < Math.max(this.windowRequests, this.limit)) return;
    const sorted = [...this.samples].sort((a, b) => a - b);
    const p90 = sorted[Math.max(0, Math.ceil(sorted.length * 0.9) - 1)] ?? 0;
    if (this.overloaded || p90 > this.options.budgetMs)
      this.limitValue = Math.max(this.min, this.limitValue * this.decrease);
    else this.limitValue = Math.min(this.max, this.limitValue + 1);
    this.samples = [];
    this.overloaded = false;
  }
}

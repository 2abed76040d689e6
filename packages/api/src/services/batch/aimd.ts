/**
 * Adaptive concurrency for a batch job (additive increase, multiplicative
 * decrease, as TCP's congestion control), driven by what online clients of
 * the target see: the goal is that online p99 rises by at most
 * `onlineTolerance` (10 %) over the same online load without the job.
 *
 * Time is cut into windows (about a second each, online-latency-monitor.ts
 * calls `window` at the end of each with the online p99 the gateway saw).
 * A window whose online p99 is within the online budget, and whose own
 * requests' p90 is within the job's budget, allows one more request in
 * flight; one over either, or with a request refused as busy, cuts the
 * limit by `decrease`, and the limit then holds while the online span still
 * holds requests from before the cut.
 *
 * The online budget is `(1 + onlineTolerance)` × the baseline: the online
 * p99 measured by a probe, a window or two in which the job sends nothing
 * (the limit is 0), at the start, every `probeEveryWindows` windows, and
 * as soon as the online rate moved by half or more since the last probe
 * (online load changed, so the baseline did too). A p99 from a closed-loop
 * perf report is no baseline: online p99 at half a model's capacity is
 * already over twice the report's p99 at concurrency 1 (bench/batch.mjs),
 * so a job held to that would never run. Until a probe saw online traffic,
 * the report's budget (`budgetMs`) stands in.
 */
export interface AimdOptions {
  /** The latency (ms) the job's own requests may take at their p90 (from the perf report); also the online budget until a probe measured one. */
  budgetMs: number;
  /** How far online p99 may rise over its baseline (0.1 = 10 %). */
  onlineTolerance?: number;
  /** Online requests a span needs for its p99 to count. Default 20. */
  minOnlineRequests?: number;
  /** Windows the online p99 is measured over (sliding); a cut holds the limit this many windows minus one. Default 3. */
  onlineSpanWindows?: number;
  /** Windows between probes. Default 60. */
  probeEveryWindows?: number;
  /** Windows a probe lasts (the first part drains the job's requests in flight). Default 2. */
  probeWindows?: number;
  min?: number;
  max?: number;
  /** The multiplier on a backoff (0..1). Default 0.5. */
  decrease?: number;
  /** The limit after the first probe. Default 1. */
  initial?: number;
}

/** Online latency over a span, as the gateway reported it (online_latency). */
export interface OnlineSample {
  spanMs: number;
  count: number;
  /** null when count is 0. */
  p99Ms: number | null;
}

export type AimdReason = "probe" | "baseline" | "overloaded" | "online-over" | "job-over" | "within" | "hold" | "idle";

export interface AimdDecision {
  limit: number;
  reason: AimdReason;
  onlineP99Ms?: number | undefined;
  onlineBudgetMs: number;
}

export class AimdLimiter {
  private limitValue: number;
  private samples: number[] = [];
  private overloaded = false;
  private probeLeft = 0;
  private windowsSinceProbe = 0;
  private holdLeft = 0;
  private baseline: { p99Ms: number; perSec: number } | undefined;
  readonly min: number;
  readonly max: number;
  readonly onlineSpanWindows: number;
  readonly probeWindows: number;
  private readonly decrease: number;
  private readonly tolerance: number;
  private readonly minOnline: number;
  private readonly probeEvery: number;

  constructor(private readonly options: AimdOptions) {
    this.min = options.min ?? 1;
    this.max = options.max ?? 64;
    this.decrease = options.decrease ?? 0.5;
    this.tolerance = options.onlineTolerance ?? 0.1;
    this.minOnline = options.minOnlineRequests ?? 20;
    this.onlineSpanWindows = Math.max(1, options.onlineSpanWindows ?? 3);
    this.probeEvery = options.probeEveryWindows ?? 60;
    this.probeWindows = Math.max(1, options.probeWindows ?? 2);
    this.limitValue = clamp(options.initial ?? 1, this.min, this.max);
    // The first baseline is the online load before the job sends anything.
    this.probeLeft = this.probeWindows;
  }

  /** The requests the job may have in flight now: 0 during a probe. */
  get limit(): number {
    return this.probing ? 0 : Math.floor(this.limitValue);
  }

  /** True while a probe holds the job's requests back to measure online latency alone. */
  get probing(): boolean {
    return this.probeLeft > 0;
  }

  get budgetMs(): number {
    return this.options.budgetMs;
  }

  /** Online p99 may reach this (ms) before the job backs off. */
  get onlineBudgetMs(): number {
    return this.baseline === undefined ? this.options.budgetMs : this.baseline.p99Ms * (1 + this.tolerance);
  }

  /** The online p99 (ms) of the last probe, or its average with the ones before; undefined before a probe saw online traffic. */
  get baselineMs(): number | undefined {
    return this.baseline?.p99Ms;
  }

  /** A finished request of the job's: its latency (ms); `overloaded`: the gateway refused it as busy (429/503). */
  record(latencyMs: number, overloaded = false): void {
    this.samples.push(latencyMs);
    if (overloaded) this.overloaded = true;
  }

  /** The end of a window: `online` is the online latency over the last span (undefined: the gateway could not say). */
  window(online: OnlineSample | undefined): AimdDecision {
    const onlineP99 = online !== undefined && online.count >= this.minOnline ? (online.p99Ms ?? undefined) : undefined;
    const samples = this.samples;
    const overloaded = this.overloaded;
    this.samples = [];
    this.overloaded = false;
    if (this.probeLeft > 0) {
      this.probeLeft -= 1;
      if (this.probeLeft > 0) return this.decision("probe", onlineP99);
      this.windowsSinceProbe = 0;
      this.holdLeft = 0;
      // No online traffic to speak of: no baseline (the report's budget stands in until traffic returns and is probed).
      if (onlineP99 === undefined || online === undefined) this.baseline = undefined;
      else {
        const perSec = (online.count * 1000) / online.spanMs;
        // Averaged with the last probe's at a similar rate: one probe's p99 is a short, noisy sample.
        const similar = this.baseline !== undefined && withinFactor(perSec, this.baseline.perSec, 1.5);
        this.baseline = {
          p99Ms: similar && this.baseline !== undefined ? (this.baseline.p99Ms + onlineP99) / 2 : onlineP99,
          perSec,
        };
      }
      return this.decision("baseline", onlineP99);
    }
    this.windowsSinceProbe += 1;
    let reason: AimdReason;
    if (overloaded) reason = "overloaded";
    else if (this.holdLeft > 0) reason = "hold";
    else if (onlineP99 !== undefined && onlineP99 > this.onlineBudgetMs) reason = "online-over";
    else if (samples.length > 0 && percentile(samples, 0.9) > this.options.budgetMs) reason = "job-over";
    else reason = samples.length > 0 ? "within" : "idle";
    if (this.holdLeft > 0) this.holdLeft -= 1;
    if (reason === "overloaded" || reason === "online-over" || reason === "job-over") {
      this.limitValue = Math.max(this.min, this.limitValue * this.decrease);
      this.holdLeft = this.onlineSpanWindows - 1;
    } else if (reason === "within") this.limitValue = Math.min(this.max, this.limitValue + 1);
    const decision = this.decision(reason, onlineP99);
    if (this.probeDue(online)) this.probeLeft = this.probeWindows;
    return decision;
  }

  /** Time to measure the baseline again: the period is over, or online load moved since the last one. */
  private probeDue(online: OnlineSample | undefined): boolean {
    if (this.probeEvery > 0 && this.windowsSinceProbe >= this.probeEvery) return true;
    // Give a new rate a full span to settle before judging that it moved.
    if (online === undefined || this.windowsSinceProbe < this.onlineSpanWindows) return false;
    const perSec = (online.count * 1000) / online.spanMs;
    if (this.baseline === undefined) return online.count >= this.minOnline;
    return !withinFactor(perSec, this.baseline.perSec, 1.5);
  }

  private decision(reason: AimdReason, onlineP99Ms: number | undefined): AimdDecision {
    return { limit: this.limit, reason, onlineP99Ms, onlineBudgetMs: this.onlineBudgetMs };
  }
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/** a and b differ by less than `factor` either way (two rates near 0 count as alike). */
function withinFactor(a: number, b: number, factor: number): boolean {
  if (a < 1 && b < 1) return true;
  return a <= b * factor && b <= a * factor;
}

function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(sorted.length * q) - 1)] ?? 0;
}

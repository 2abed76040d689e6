/**
 * Adaptive concurrency for a batch job (additive increase, multiplicative
 * decrease, as TCP's congestion control), driven by what online clients of
 * the target see: the goal is that online p99 rises by at most
 * `onlineTolerance` (10 %) over the same online load without the job.
 *
 * Why it is built this way: a p99 is a noisy statistic. At 170 online
 * requests a second, the p99 of one second is about the second-worst
 * request, and a controller that cuts whenever one window's p99 crosses a
 * budget 10 % over the baseline cuts on noise (bench/batch.mjs: the job got
 * 55 % of the idle capacity). So every judgement here is over many
 * requests, and the limit moves in **steps**:
 *
 * - A step lasts `onlineSpanWindows` windows (3) at one limit. At its end
 *   the online p99 over exactly those windows (the monitor reads the span
 *   from the gateway) is compared with the online budget. A reading that
 *   mixes two limits is never judged, so there is no overshoot from a
 *   lagging span and no hold after a cut beyond the step itself.
 * - **Clearly** within the budget (online p99 at most half the tolerance
 *   over the baseline) while the job's own requests' p90 is within
 *   `budgetMs`: the limit × `growth` (1.5, at least one more); clearly
 *   within while the job's p90 is over it: one more. Within the budget
 *   but not clearly (`steady`): the limit **holds**. Why: a controller
 *   that grows until online p99 reaches the budget sits at the budget, and
 *   half its readings are over it; the set point is the band between half
 *   the tolerance and the tolerance (bench:batch with one more per step
 *   within the budget: online p99 +9.9 % in one run, +30.7 % in the next
 *   on a busier host; with the band +7.0 %, README "Batch jobs"). And why
 *   growth by half: a job request waits at the lowest priority, so the
 *   ones queued behind an execution cost online requests little, and one
 *   request more per step took a job half its run to reach
 *   the few in flight that put one of its requests into every execution
 *   (bench:batch: 2 in flight at the median, 71 % of the idle capacity).
 *   The job's own p90 ends the fast growth once its requests queue rather
 *   than execute: more of them would only wait (and a probe would have to
 *   drain them), so from there it grows by one.
 * - Over the budget: a cut only when the step before was over it too
 *   (**confirmed**): the limit × `decrease` (0.75), or × 0.5 when this step
 *   is over the budget by the tolerance again (about twice the tolerance
 *   over the baseline: cut hard). A first step over it holds the limit for
 *   another step (`over-once`), and so does the first step over it after a
 *   cut: each cut needs its own two steps in a row. Why: a step's p99 is
 *   that of a few hundred requests, and on a shared host a stall of a few
 *   seconds puts one step in a few over the budget, far over too, with the
 *   job doing nothing different; when each over cut, and a step over after
 *   a cut counted as confirmed, such stalls held a job at one request in
 *   flight (bench:batch: over and within alternating step by step, 63 % of
 *   the idle capacity). A job that does raise online p99 keeps it over step
 *   after step, and is cut every second step; a busy gateway (below) and a
 *   move of the online rate (a probe) act at once either way.
 * - A request the gateway refused as busy (429/503) halves the limit at the
 *   end of the window it happened in, without waiting for the step.
 * - The job's own requests' p90 against `budgetMs` only bounds its queue
 *   when online latency cannot be judged (too few online requests, or a
 *   gateway that cannot say): with online traffic, online p99 decides, and
 *   a job request queued behind online ones (it runs at the lowest priority)
 *   is doing what it should.
 *
 * The online budget is `(1 + onlineTolerance)` × the **baseline**: the
 * median online p99 of the last `baselineProbes` (5) probes at a similar
 * online rate. A probe is a window or two in which the job sends nothing
 * (the limit is 0): at the start, every `probeEveryWindows` windows, and as
 * soon as the online rate moved by half or more from the baseline's rate
 * (online load changed, so the baseline did too).
 *
 * A probe at another rate does not drop the baseline on its own: it is held
 * aside until the next probe **confirms** the move (its rate is within half
 * of the held one's; the two then are the new baseline's first probes, and
 * the old ones are dropped). A probe back at the baseline's rate discards
 * it. Why: a probe's own rate is noisy too. When the job stops sending,
 * online requests queued behind its requests finish together, so a probe
 * may count more online requests per second than arrive; when each such
 * probe dropped the others, the baseline was whatever one probe caught, and
 * a lucky low one held a job at one request in flight for 40 s
 * (bench:batch). While a move waits for its confirmation the old baseline
 * stands (the next probe is due a step later, as long as the rate stays
 * away from the baseline's).
 * The first probe also reads `firstProbeSpanWindows` (10) windows of online
 * latency from before the job started, when nothing of the job's ran, so the
 * first baseline is of many requests. A median, unlike a mean, is not moved
 * by one probe that caught a burst; of an even count it is the lower middle
 * one, so of two probes the quieter counts. A p99 from a closed-loop perf report is
 * no baseline: online p99 at half a model's capacity is already over twice
 * the report's p99 at concurrency 1, so a job held to that would never run.
 * Until a probe saw online traffic, the report's budget (`budgetMs`) stands in.
 */
export interface AimdOptions {
  /** The latency (ms) the job's own requests may take at their p90 (from the perf report) while online latency cannot be judged; also the online budget until a probe measured one. */
  budgetMs: number;
  /** How far online p99 may rise over its baseline (0.1 = 10 %). */
  onlineTolerance?: number;
  /** Online requests a span needs for its p99 to count. Default 20. */
  minOnlineRequests?: number;
  /** Windows of one step at one limit; online p99 is read over them. Default 3. */
  onlineSpanWindows?: number;
  /** Windows between probes. Default 60. */
  probeEveryWindows?: number;
  /** Windows a probe lasts (the first part drains the job's requests in flight). Default 2. */
  probeWindows?: number;
  /** Probes (at a similar online rate) whose median p99 is the baseline. Default 5. */
  baselineProbes?: number;
  /** Windows the first probe reads (the job has sent nothing before it). Default 10. */
  firstProbeSpanWindows?: number;
  min?: number;
  max?: number;
  /** The multiplier on a back-off for online p99 or the job's own over budget (0..1). Default 0.75. */
  decrease?: number;
  /** The multiplier on a step clearly within the online budget (> 1; at least one request more). Default 1.5. */
  growth?: number;
  /** The limit after the first probe (job-execution.ts: from the model's batch size). Default 1. */
  initial?: number;
}

/** Online latency over a span, as the gateway reported it (online_latency). */
export interface OnlineSample {
  spanMs: number;
  count: number;
  /** null when count is 0. */
  p99Ms: number | null;
}

/**
 * hold: in the middle of a step (the limit is being measured); over-once: a step over the online budget that is
 * not the second in a row since the last cut (the limit holds); clear: a step clearly within it (the limit grows by
 * `growth`); steady: within the budget but not clearly (the limit holds: the set point); within: online p99 clearly
 * within budget while the job's own p90 is over its budget, or no online traffic to judge (one more request).
 */
export type AimdReason =
  | "probe"
  | "baseline"
  | "overloaded"
  | "online-over"
  | "over-once"
  | "job-over"
  | "within"
  | "steady"
  | "clear"
  | "hold"
  | "idle";

export interface AimdDecision {
  limit: number;
  reason: AimdReason;
  onlineP99Ms?: number | undefined;
  onlineBudgetMs: number;
}

interface Probe {
  /** null: too few online requests in the probe for a p99 (no online traffic to speak of). */
  p99Ms: number | null;
  perSec: number;
}

export class AimdLimiter {
  private limitValue: number;
  private samples: number[] = [];
  private overloaded = false;
  private probeLeft = 0;
  private probesDone = 0;
  private windowsSinceProbe = 0;
  /** Windows of the current step so far (at the current limit). */
  private stepWindows = 0;
  /** The baseline's probes: the last ones at a similar online rate, oldest first; empty while none saw online traffic. */
  private probes: Probe[] = [];
  /** The online rate (requests/s) of the baseline's probes; undefined before a probe could read it. */
  private baselineRate: number | undefined;
  /** A probe at another rate than the baseline's, waiting for the next probe to confirm the move. */
  private moved: Probe | undefined;
  /** The last judged step was over the online budget and did not cut (a second one in a row is confirmed). */
  private lastStepOver = false;
  readonly min: number;
  readonly max: number;
  readonly onlineSpanWindows: number;
  readonly probeWindows: number;
  private readonly decrease: number;
  private readonly growth: number;
  private readonly tolerance: number;
  private readonly minOnline: number;
  private readonly probeEvery: number;
  private readonly baselineProbes: number;
  private readonly firstProbeSpan: number;

  constructor(private readonly options: AimdOptions) {
    this.min = options.min ?? 1;
    this.max = options.max ?? 64;
    this.decrease = options.decrease ?? 0.75;
    if (!(this.decrease > 0 && this.decrease < 1))
      throw new RangeError(`decrease must be in (0, 1), not ${this.decrease}`);
    this.growth = options.growth ?? 1.5;
    if (!(this.growth > 1)) throw new RangeError(`growth must be over 1, not ${this.growth}`);
    this.tolerance = options.onlineTolerance ?? 0.1;
    this.minOnline = options.minOnlineRequests ?? 20;
    this.onlineSpanWindows = Math.max(1, options.onlineSpanWindows ?? 3);
    this.probeEvery = options.probeEveryWindows ?? 60;
    this.probeWindows = Math.max(1, options.probeWindows ?? 2);
    this.baselineProbes = Math.max(1, options.baselineProbes ?? 5);
    this.firstProbeSpan = Math.max(this.probeWindows, options.firstProbeSpanWindows ?? 10);
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

  /** True during the first probe: the job has sent nothing yet, so the online history before it counts too. */
  get firstProbe(): boolean {
    return this.probing && this.probesDone === 0;
  }

  /**
   * How many windows back the online latency read at the end of this window should reach: the step so far
   * (a judgement is over the step's windows only), a probe's windows, or, for the first probe, the online
   * history before the job started too.
   */
  get readWindows(): number {
    if (this.probing) return this.firstProbe ? this.firstProbeSpan : this.probeWindows;
    return Math.min(this.onlineSpanWindows, this.stepWindows + 1);
  }

  get budgetMs(): number {
    return this.options.budgetMs;
  }

  /** Online p99 may reach this (ms) before the job backs off. */
  get onlineBudgetMs(): number {
    const baseline = this.baselineMs;
    return baseline === undefined ? this.options.budgetMs : baseline * (1 + this.tolerance);
  }

  /** The median online p99 (ms) of the last probes at a similar rate; undefined before a probe saw online traffic. */
  get baselineMs(): number | undefined {
    return this.probes.length === 0 ? undefined : median(this.probes.map((probe) => probe.p99Ms as number));
  }

  /** A finished request of the job's: its latency (ms); `overloaded`: the gateway refused it as busy (429/503). */
  record(latencyMs: number, overloaded = false): void {
    this.samples.push(latencyMs);
    if (overloaded) this.overloaded = true;
  }

  /** The end of a window: `online` is the online latency over the last `readWindows` windows (undefined: the gateway could not say). */
  window(online: OnlineSample | undefined): AimdDecision {
    const onlineP99 = online !== undefined && online.count >= this.minOnline ? (online.p99Ms ?? undefined) : undefined;
    if (this.probeLeft > 0) {
      this.probeLeft -= 1;
      this.samples = [];
      this.overloaded = false;
      if (this.probeLeft > 0) return this.decision("probe", onlineP99);
      this.endProbe(online, onlineP99);
      return this.decision("baseline", onlineP99);
    }
    this.windowsSinceProbe += 1;
    this.stepWindows += 1;
    const reason = this.judge(onlineP99);
    if (reason !== "hold") {
      if (reason === "overloaded") this.cut(0.5);
      else if (reason === "online-over") {
        // Confirmed and far over (twice the tolerance): cut as hard as a busy gateway.
        const far = onlineP99 !== undefined && onlineP99 > this.onlineBudgetMs * (1 + this.tolerance);
        this.cut(far ? 0.5 : this.decrease);
      } else if (reason === "job-over") this.cut(this.decrease);
      else if (reason === "within") this.limitValue = Math.min(this.max, this.limitValue + 1);
      else if (reason === "clear")
        this.limitValue = Math.min(this.max, Math.max(this.limitValue + 1, this.limitValue * this.growth));
      // Only a step over that did not cut waits for its confirmation; a busy gateway is no reading of online p99.
      if (reason !== "overloaded") this.lastStepOver = reason === "over-once";
      this.stepWindows = 0;
      this.samples = [];
      this.overloaded = false;
    }
    const decision = this.decision(reason, onlineP99);
    if (this.probeDue(online)) this.probeLeft = this.probeWindows;
    return decision;
  }

  /** What this window decides: a busy gateway at once; otherwise nothing until the step is complete. */
  private judge(onlineP99: number | undefined): AimdReason {
    if (this.overloaded) return "overloaded";
    if (this.stepWindows < this.onlineSpanWindows) return "hold";
    const jobWithin = this.samples.length > 0 && percentile(this.samples, 0.9) <= this.options.budgetMs;
    if (onlineP99 !== undefined) {
      const budget = this.onlineBudgetMs;
      if (onlineP99 > budget) return this.lastStepOver ? "online-over" : "over-once";
      const baseline = this.baselineMs;
      const clearly = baseline !== undefined && onlineP99 <= baseline * (1 + this.tolerance / 2);
      if (clearly && jobWithin) return "clear";
      // Between half the tolerance and the budget: the limit holds there (the set point), see the class comment.
      if (!clearly && this.samples.length > 0) return "steady";
    } else if (this.samples.length > 0 && !jobWithin) return "job-over";
    return this.samples.length > 0 ? "within" : "idle";
  }

  private cut(factor: number): void {
    this.limitValue = Math.max(this.min, this.limitValue * factor);
  }

  private endProbe(online: OnlineSample | undefined, onlineP99: number | undefined): void {
    this.probesDone += 1;
    this.windowsSinceProbe = 0;
    this.stepWindows = 0;
    // A probe is no step at the limit: the next step's over is a first one again (the baseline may have moved).
    this.lastStepOver = false;
    // The gateway could not say: the probe measured nothing, and the baseline stays as it was.
    if (online === undefined) return;
    const probe: Probe = { p99Ms: onlineP99 ?? null, perSec: (online.count * 1000) / online.spanMs };
    if (this.baselineRate === undefined || withinFactor(probe.perSec, this.baselineRate, 1.5)) {
      // The baseline's rate (or the first reading of one): the probe joins it, and a move held aside was noise.
      this.moved = undefined;
      this.adopt([...this.probes, probe], probe.perSec);
      return;
    }
    // No baseline to keep (no probe saw online traffic yet): nothing to protect, the rate is taken as it is.
    if (this.probes.length === 0) {
      this.moved = undefined;
      this.adopt([probe], probe.perSec);
      return;
    }
    const held = this.moved;
    if (held !== undefined && withinFactor(probe.perSec, held.perSec, 1.5)) {
      // Two probes in a row at the new rate: online load moved, and the old probes measured another load.
      this.moved = undefined;
      this.adopt([held, probe], probe.perSec);
      return;
    }
    this.moved = probe;
  }

  /** The baseline's probes become `probes` (those that saw online traffic, the last `baselineProbes`), at `rate`. */
  private adopt(probes: readonly Probe[], rate: number): void {
    this.probes = probes.filter((probe) => probe.p99Ms !== null).slice(-this.baselineProbes);
    this.baselineRate = rate;
  }

  /** Time to measure the baseline again: the period is over, or online load moved since the last one. */
  private probeDue(online: OnlineSample | undefined): boolean {
    if (this.probeEvery > 0 && this.windowsSinceProbe >= this.probeEvery) return true;
    // Give a new rate a full step after the probe to settle before judging that it moved.
    if (online === undefined || this.windowsSinceProbe < this.onlineSpanWindows) return false;
    const perSec = (online.count * 1000) / online.spanMs;
    if (this.baselineRate === undefined) return online.count >= this.minOnline;
    // Against the baseline's rate, not a probe held aside: while the rate stays moved, the next probe confirms it.
    return !withinFactor(perSec, this.baselineRate, 1.5);
  }

  private decision(reason: AimdReason, onlineP99Ms: number | undefined): AimdDecision {
    return { limit: this.limit, reason, onlineP99Ms, onlineBudgetMs: this.onlineBudgetMs };
  }
}

/**
 * The limit a job starts at after its first probe: two executions' worth of its requests per instance (one
 * request set executing, one queued for the next execution), so its requests are in nearly every execution
 * from the start instead of after a dozen steps of growth. An execution holds max_batch_size rows (one, for a
 * model that does not batch), i.e. ceil(maxBatchSize / rowsPerRequest) of the job's requests; 2 rows a
 * request to a batch of 4 on one instance start at 4. Online requests go first in every execution (the job
 * runs at the lowest priority), so the queued ones cost online latency little; the steps correct it from there.
 */
export function initialJobLimit(
  target: { maxBatchSize: number; instances?: number | undefined },
  rowsPerRequest: number,
): number {
  const perExecution = Math.max(1, Math.ceil(Math.max(1, target.maxBatchSize) / Math.max(1, rowsPerRequest)));
  return 2 * perExecution * Math.max(1, target.instances ?? 1);
}

/**
 * The most requests a job may have in flight: twice its start (four executions' worth per instance). More
 * would not run any sooner (every execution already has the job's rows), they would only wait at the lowest
 * priority, and a limit that grew far past this point made the controller's cuts do nothing: from 15 in
 * flight a cut to 11, then 8, left every execution as full as before, so online p99 stayed over its budget
 * for step after step (bench:batch on a quiet host: a median of 15 in flight, online p99 +13.4 %).
 */
export function jobLimitCeiling(
  target: { maxBatchSize: number; instances?: number | undefined },
  rowsPerRequest: number,
): number {
  return 2 * initialJobLimit(target, rowsPerRequest);
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

/** The median; of an even count, the lower middle one (of two probes, the quieter: an outlier is not averaged in). */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
}

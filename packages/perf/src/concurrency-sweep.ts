/**
 * A concurrency sweep, as perf_analyzer and Model Analyzer run them:
 * concurrency 1, 2, 4, 8, ... until the throughput stops rising, p99 breaks
 * the latency budget (higher concurrency then only queues), the plan's
 * highest concurrency, or the time bound, whichever comes first. Automatic
 * perf reports (the control plane's perf-runs.ts) and the config search's
 * candidates (config-searches.ts) both sweep with it. Pure orchestration:
 * measuring a step is the caller's, so the rules are unit-tested with a
 * fake measure and clock.
 */
export interface SweepPlan {
  maxConcurrency: number;
  /** A step must beat the best throughput so far by this much, else the sweep stops (the curve has flattened). */
  minGainPercent: number;
  /** The whole sweep's budget; the step running at the deadline is stopped through its signal (what it completed is kept). Default: none. */
  timeBoundMs?: number;
  /** A step whose p99 is over this (or that has none: no request succeeded) is kept and ends the sweep. Default: none. */
  p99BudgetUs?: number;
}

export interface SweepStepResult {
  concurrency: number;
  /** Inferences per second; a step with no successful request has 0. */
  throughput: number;
  /** p99 latency; null when no request succeeded. Read only when the plan has a p99 budget. */
  latencyP99Us?: number | null;
}

export type SweepStopReason = "plateau" | "max-concurrency" | "time-bound" | "aborted" | "no-throughput" | "p99-budget";

export interface SweepOutcome<S extends SweepStepResult> {
  steps: S[];
  stopReason: SweepStopReason;
}

export interface SweepClock {
  now(): number;
  /** Calls fn after ms; returns a cancel function. */
  setTimer(ms: number, fn: () => void): () => void;
}

export const REAL_CLOCK: SweepClock = {
  now: () => Date.now(),
  setTimer: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    timer.unref?.();
    return () => clearTimeout(timer);
  },
};

/** 1, 2, 4, ... up to maxConcurrency, with maxConcurrency itself last when it is not a power of two. */
export function sweepConcurrencies(maxConcurrency: number): number[] {
  const values: number[] = [];
  for (let value = 1; value < maxConcurrency; value *= 2) values.push(value);
  values.push(maxConcurrency);
  return values;
}

/**
 * Measures each concurrency in turn. `measure` gets a signal that aborts at
 * the deadline or when `signal` aborts; it returns the step (possibly
 * partial) or undefined when nothing was measured.
 */
export async function runConcurrencySweep<S extends SweepStepResult>(
  plan: SweepPlan,
  measure: (concurrency: number, signal: AbortSignal) => Promise<S | undefined>,
  options: { clock?: SweepClock; signal?: AbortSignal } = {},
): Promise<SweepOutcome<S>> {
  const clock = options.clock ?? REAL_CLOCK;
  const deadline = clock.now() + (plan.timeBoundMs ?? Number.POSITIVE_INFINITY);
  const steps: S[] = [];
  let best = 0;
  for (const concurrency of sweepConcurrencies(plan.maxConcurrency)) {
    if (options.signal?.aborted) return { steps, stopReason: "aborted" };
    const left = deadline - clock.now();
    if (left <= 0) return { steps, stopReason: "time-bound" };
    const controller = new AbortController();
    let timedOut = false;
    const cancelTimer = Number.isFinite(left)
      ? clock.setTimer(left, () => {
          timedOut = true;
          controller.abort(new Error("the time bound of the plan was reached"));
        })
      : () => undefined;
    const onAbort = (): void => controller.abort(options.signal!.reason);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    let step: S | undefined;
    try {
      step = await measure(concurrency, controller.signal);
    } finally {
      cancelTimer();
      options.signal?.removeEventListener("abort", onAbort);
    }
    if (step !== undefined) steps.push(step);
    if (options.signal?.aborted) return { steps, stopReason: "aborted" };
    if (timedOut) return { steps, stopReason: "time-bound" };
    if (step === undefined || step.throughput <= 0) return { steps, stopReason: "no-throughput" };
    if (plan.p99BudgetUs !== undefined && (step.latencyP99Us == null || step.latencyP99Us > plan.p99BudgetUs))
      return { steps, stopReason: "p99-budget" };
    if (best > 0 && step.throughput < best * (1 + plan.minGainPercent / 100)) return { steps, stopReason: "plateau" };
    best = Math.max(best, step.throughput);
  }
  return { steps, stopReason: "max-concurrency" };
}

/**
 * The step whose figures stand for a sweep under a p99 budget: the highest
 * throughput within the budget (what the config can serve under the
 * objective's latency bound, as Model Analyzer reads its sweeps); when no
 * step is within budget, the lowest concurrency's.
 */
export function representativeStep<S extends SweepStepResult>(steps: readonly S[], p99BudgetUs: number): S | undefined {
  let best: S | undefined;
  for (const step of steps) {
    if (step.latencyP99Us == null || step.latencyP99Us > p99BudgetUs || step.throughput <= 0) continue;
    if (best === undefined || step.throughput > best.throughput) best = step;
  }
  return best ?? steps[0];
}

/**
 * The default plan of automatic perf reports: concurrency 1, 2, 4, 8, ...
 * until the throughput stops rising, the plan's highest concurrency, or the
 * time bound, whichever comes first. Pure orchestration: measuring a step is
 * the caller's (runPerf against the gateway in perf-runs.ts), so the rules
 * are unit-tested with a fake measure and clock.
 */
export interface SweepPlan {
  maxConcurrency: number;
  /** A step must beat the best throughput so far by this much, else the sweep stops (the curve has flattened). */
  minGainPercent: number;
  /** The whole sweep's budget; the step running at the deadline is stopped through its signal (what it completed is kept). */
  timeBoundMs: number;
}

export interface SweepStepResult {
  concurrency: number;
  /** Inferences per second; a step with no successful request has 0. */
  throughput: number;
}

export type SweepStopReason = "plateau" | "max-concurrency" | "time-bound" | "aborted" | "no-throughput";

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
  const deadline = clock.now() + plan.timeBoundMs;
  const steps: S[] = [];
  let best = 0;
  for (const concurrency of sweepConcurrencies(plan.maxConcurrency)) {
    if (options.signal?.aborted) return { steps, stopReason: "aborted" };
    const left = deadline - clock.now();
    if (left <= 0) return { steps, stopReason: "time-bound" };
    const controller = new AbortController();
    let timedOut = false;
    const cancelTimer = clock.setTimer(left, () => {
      timedOut = true;
      controller.abort(new Error("the time bound of the plan was reached"));
    });
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
    if (best > 0 && step.throughput < best * (1 + plan.minGainPercent / 100)) return { steps, stopReason: "plateau" };
    best = Math.max(best, step.throughput);
  }
  return { steps, stopReason: "max-concurrency" };
}

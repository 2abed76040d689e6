/**
 * The short concurrency sweep that measures one candidate: concurrency 1,
 * 2, 4, … up to maxConcurrency, stopping once throughput stops rising
 * (gains under minGainPercent) or p99 breaks the budget, since higher
 * concurrency then only queues. The candidate's figures are those of the
 * step with the highest throughput within the budget (what the candidate
 * can serve under the objective's latency bound, as model analyzer reads
 * its sweeps); when no step is within budget, the lowest concurrency's.
 */
export interface SweepStep {
  concurrency: number;
  /** Inferences per second. */
  throughput: number;
  /** null when no request succeeded. */
  latencyP99Us: number | null;
  requests: number;
  errors: number;
}

export interface SweepPlan {
  maxConcurrency: number;
  minGainPercent: number;
  p99BudgetUs: number;
}

export function concurrencyLevels(maxConcurrency: number): number[] {
  const levels: number[] = [];
  for (let level = 1; level < maxConcurrency; level *= 2) levels.push(level);
  levels.push(maxConcurrency);
  return levels;
}

export async function sweepConcurrency(plan: SweepPlan, measureAt: (concurrency: number) => Promise<SweepStep>): Promise<SweepStep[]> {
  const steps: SweepStep[] = [];
  for (const concurrency of concurrencyLevels(plan.maxConcurrency)) {
    const step = await measureAt(concurrency);
    steps.push(step);
    if (step.latencyP99Us === null || step.latencyP99Us > plan.p99BudgetUs) break;
    const previous = steps.at(-2);
    if (previous !== undefined && previous.throughput > 0 && ((step.throughput - previous.throughput) / previous.throughput) * 100 < plan.minGainPercent) break;
  }
  return steps;
}

/** The step whose figures stand for the candidate (see the module comment). */
export function representativeStep(steps: readonly SweepStep[], p99BudgetUs: number): SweepStep | undefined {
  let best: SweepStep | undefined;
  for (const step of steps) {
    if (step.latencyP99Us === null || step.latencyP99Us > p99BudgetUs || step.throughput <= 0) continue;
    if (best === undefined || step.throughput > best.throughput) best = step;
  }
  return best ?? steps[0];
}

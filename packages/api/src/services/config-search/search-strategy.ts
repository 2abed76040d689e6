/**
 * The config search's strategy: which candidate configs to measure, in
 * what order, and which one to recommend. Pure: it is fed a measure()
 * function (the service measures on the gateway; tests pass a synthetic
 * one) and a clock, so pruning and bounds are unit-tested.
 *
 * Like Triton model analyzer's quick search it does not walk the grid
 * (instances × max batch × queue delay × preferred sizes would be hundreds
 * of configs): it starts from the model's current config and hill-climbs
 * one dimension at a time, keeping the best config found so far as the
 * base of the next dimension:
 *
 *   1. instance count: 1, 2, 4, … up to maxInstances;
 *   2. max batch size (models that batch): 1, 2, 4, … up to maxBatchSize,
 *      with dynamic batching on;
 *   3. max queue delay among `queueDelaysUs` (dynamic batching on);
 *   4. preferred batch sizes: none, or [max_batch_size].
 *
 * A dimension climbs upward from the base's value and stops at the first
 * step that breaks the p99 budget or gains less than `minGainPercent` on
 * the objective (more instances or a longer queue delay past that point
 * cost latency and resources for nothing). The search stops outright at
 * `maxCandidates` measurements or once `maxDurationMs` has passed.
 */

/** One point of the search space, in the units of the model config. */
export interface SearchCandidate {
  instanceCount: number;
  /** 0: the model does not batch. */
  maxBatchSize: number;
  /** null: no dynamic batching. */
  dynamicBatching: { preferredBatchSizes: number[]; maxQueueDelayUs: number } | null;
}

/** What measuring one candidate gave. */
export interface CandidateMeasurement {
  /** Inferences per second at the best concurrency within the p99 budget (or at the lowest concurrency when none is). */
  throughput: number;
  /** p99 latency at that concurrency, microseconds; null when no request succeeded. */
  latencyP99Us: number | null;
  /** The concurrency the figures are from. */
  concurrency: number;
  /** Cost per 1,000 inferences at that throughput; null without a hardware profile or throughput. */
  costPer1000: number | null;
}

export type SearchObjectiveKind = "MAX_THROUGHPUT" | "MIN_COST";

export interface SearchObjective {
  kind: SearchObjectiveKind;
  /** The p99 latency a recommended config must stay within, microseconds. */
  p99BudgetUs: number;
}

export interface SearchBounds {
  maxInstances: number;
  /** Largest max_batch_size tried; 0 keeps the model unbatched (the batch dimensions are skipped). */
  maxBatchSize: number;
  queueDelaysUs: readonly number[];
  /** A step must improve the objective by at least this much to climb further. */
  minGainPercent: number;
  maxCandidates: number;
  maxDurationMs: number;
}

export const DEFAULT_SEARCH_BOUNDS: SearchBounds = {
  maxInstances: 4,
  maxBatchSize: 16,
  queueDelaysUs: [0, 100, 500, 2000],
  minGainPercent: 5,
  maxCandidates: 12,
  maxDurationMs: 10 * 60_000,
};

export interface MeasuredCandidate {
  /** 0-based order of measurement. */
  index: number;
  /** The dimension whose climb proposed it ("baseline" for the start). */
  dimension: SearchDimension;
  candidate: SearchCandidate;
  measurement: CandidateMeasurement;
  withinBudget: boolean;
}

export type SearchDimension = "baseline" | "instances" | "maxBatchSize" | "queueDelay" | "preferredBatchSizes";

export type SearchStopReason = "completed" | "candidate-limit" | "time-limit";

export interface SearchOutcome {
  candidates: MeasuredCandidate[];
  /** Index of the recommended candidate; null when none met the p99 budget. */
  recommended: number | null;
  stopReason: SearchStopReason;
}

export interface SearchHooks {
  /** Called after each measurement (the service stores the candidate). */
  onMeasured?: (measured: MeasuredCandidate) => void | Promise<void>;
  /** Milliseconds; defaults to Date.now. */
  now?: () => number;
  /** Aborting stops before the next measurement; the reason is thrown. */
  signal?: AbortSignal;
}

export function candidateKey(candidate: SearchCandidate): string {
  const batching =
    candidate.dynamicBatching === null
      ? "off"
      : `${candidate.dynamicBatching.maxQueueDelayUs}/${candidate.dynamicBatching.preferredBatchSizes.join(",")}`;
  return `${candidate.instanceCount}|${candidate.maxBatchSize}|${batching}`;
}

export function isWithinBudget(measurement: CandidateMeasurement, objective: SearchObjective): boolean {
  return (
    measurement.throughput > 0 && measurement.latencyP99Us !== null && measurement.latencyP99Us <= objective.p99BudgetUs
  );
}

/** Higher is better; null when the objective cannot rank the candidate (no cost without a profile). */
export function objectiveScore(measurement: CandidateMeasurement, objective: SearchObjective): number | null {
  if (objective.kind === "MAX_THROUGHPUT") return measurement.throughput;
  return measurement.costPer1000 === null ? null : -measurement.costPer1000;
}

/** Relative gain of `next` over `base` on the objective, percent (cost: the share saved). */
export function gainPercent(
  base: CandidateMeasurement,
  next: CandidateMeasurement,
  objective: SearchObjective,
): number {
  if (objective.kind === "MAX_THROUGHPUT")
    return base.throughput > 0
      ? ((next.throughput - base.throughput) / base.throughput) * 100
      : next.throughput > 0
        ? Infinity
        : 0;
  if (base.costPer1000 === null || next.costPer1000 === null) return next.costPer1000 !== null ? Infinity : 0;
  return base.costPer1000 > 0 ? ((base.costPer1000 - next.costPer1000) / base.costPer1000) * 100 : 0;
}

/** The best candidate within the budget by the objective (ties: fewer instances, then higher throughput, then earlier). */
export function recommend(candidates: readonly MeasuredCandidate[], objective: SearchObjective): number | null {
  let best: MeasuredCandidate | undefined;
  for (const measured of candidates) {
    if (!measured.withinBudget) continue;
    const score = objectiveScore(measured.measurement, objective);
    if (score === null) continue;
    if (best === undefined) {
      best = measured;
      continue;
    }
    const bestScore = objectiveScore(best.measurement, objective)!;
    if (
      score > bestScore ||
      (score === bestScore &&
        (measured.candidate.instanceCount < best.candidate.instanceCount ||
          (measured.candidate.instanceCount === best.candidate.instanceCount &&
            measured.measurement.throughput > best.measurement.throughput)))
    ) {
      best = measured;
    }
  }
  return best?.index ?? null;
}

/**
 * The Pareto front of throughput (higher better) against p99 (lower
 * better): the candidates no other candidate beats on both. Returned by
 * ascending p99. Candidates without a p99 or throughput are left out.
 */
export function paretoFront<T extends { throughput: number; latencyP99Us: number | null }>(points: readonly T[]): T[] {
  const measured = points.filter((point) => point.latencyP99Us !== null && point.throughput > 0);
  const sorted = [...measured].sort((a, b) => a.latencyP99Us! - b.latencyP99Us! || b.throughput - a.throughput);
  const front: T[] = [];
  let bestThroughput = -Infinity;
  for (const point of sorted) {
    if (point.throughput > bestThroughput) {
      front.push(point);
      bestThroughput = point.throughput;
    }
  }
  return front;
}

/** Clamps the start config into the bounds (the model's current config may lie outside them). */
function startOf(current: SearchCandidate, bounds: SearchBounds): SearchCandidate {
  const maxBatchSize =
    current.maxBatchSize === 0 || bounds.maxBatchSize === 0
      ? current.maxBatchSize
      : Math.min(current.maxBatchSize, bounds.maxBatchSize);
  return { ...current, instanceCount: Math.max(1, Math.min(current.instanceCount, bounds.maxInstances)), maxBatchSize };
}

/** 1, 2, 4, … above `from`, up to `limit` (limit itself included when it is not a power of two). */
function doublingsAbove(from: number, limit: number): number[] {
  const values: number[] = [];
  for (let value = 1; value < limit; value *= 2) if (value > from) values.push(value);
  if (limit > from) values.push(limit);
  return values;
}

class SearchLimit extends Error {
  constructor(readonly reason: Exclude<SearchStopReason, "completed">) {
    super(reason);
  }
}

export async function runSearch(
  current: SearchCandidate,
  objective: SearchObjective,
  bounds: SearchBounds,
  measure: (candidate: SearchCandidate) => Promise<CandidateMeasurement>,
  hooks: SearchHooks = {},
): Promise<SearchOutcome> {
  checkBounds(bounds, objective);
  const now = hooks.now ?? Date.now;
  const started = now();
  const candidates: MeasuredCandidate[] = [];
  const seen = new Map<string, MeasuredCandidate>();

  const measureOnce = async (candidate: SearchCandidate, dimension: SearchDimension): Promise<MeasuredCandidate> => {
    const known = seen.get(candidateKey(candidate));
    if (known !== undefined) return known;
    if (hooks.signal?.aborted) throw hooks.signal.reason;
    if (candidates.length >= bounds.maxCandidates) throw new SearchLimit("candidate-limit");
    if (now() - started >= bounds.maxDurationMs) throw new SearchLimit("time-limit");
    const measurement = await measure(candidate);
    const measured: MeasuredCandidate = {
      index: candidates.length,
      dimension,
      candidate,
      measurement,
      withinBudget: isWithinBudget(measurement, objective),
    };
    candidates.push(measured);
    seen.set(candidateKey(candidate), measured);
    await hooks.onMeasured?.(measured);
    return measured;
  };

  /** Climbs `values` in order from `base`; returns the last step that gained enough (or base). */
  const climb = async (
    base: MeasuredCandidate,
    dimension: SearchDimension,
    steps: SearchCandidate[],
  ): Promise<MeasuredCandidate> => {
    let best = base;
    for (const candidate of steps) {
      const next = await measureOnce(candidate, dimension);
      if (!next.withinBudget) break;
      if (best.withinBudget && gainPercent(best.measurement, next.measurement, objective) < bounds.minGainPercent)
        break;
      best = next;
    }
    return best;
  };

  let stopReason: SearchStopReason = "completed";
  try {
    const start = startOf(current, bounds);
    let base = await measureOnce(start, "baseline");

    base = await climb(
      base,
      "instances",
      doublingsAbove(base.candidate.instanceCount, bounds.maxInstances).map((instanceCount) => ({
        ...base.candidate,
        instanceCount,
      })),
    );

    if (start.maxBatchSize > 0 && bounds.maxBatchSize > 0) {
      const batching = base.candidate.dynamicBatching ?? { preferredBatchSizes: [], maxQueueDelayUs: 0 };
      base = await climb(
        base,
        "maxBatchSize",
        doublingsAbove(base.candidate.maxBatchSize, bounds.maxBatchSize).map((maxBatchSize) => ({
          ...base.candidate,
          maxBatchSize,
          dynamicBatching: {
            ...batching,
            preferredBatchSizes: batching.preferredBatchSizes.filter((size) => size <= maxBatchSize),
          },
        })),
      );
      const withBatching = base.candidate.dynamicBatching ?? { preferredBatchSizes: [], maxQueueDelayUs: 0 };
      const delays = [...new Set(bounds.queueDelaysUs)]
        .sort((a, b) => a - b)
        .filter((delay) => delay > withBatching.maxQueueDelayUs);
      base = await climb(base, "queueDelay", [
        ...(base.candidate.dynamicBatching === null ? [{ ...base.candidate, dynamicBatching: withBatching }] : []),
        ...delays.map((maxQueueDelayUs) => ({
          ...base.candidate,
          dynamicBatching: { ...withBatching, maxQueueDelayUs },
        })),
      ]);
      const tuned = base.candidate.dynamicBatching;
      if (tuned !== null && base.candidate.maxBatchSize > 1) {
        const preferred = tuned.preferredBatchSizes.length === 0 ? [base.candidate.maxBatchSize] : [];
        await climb(base, "preferredBatchSizes", [
          { ...base.candidate, dynamicBatching: { ...tuned, preferredBatchSizes: preferred } },
        ]);
      }
    }
  } catch (error) {
    if (!(error instanceof SearchLimit)) throw error;
    stopReason = error.reason;
  }
  return { candidates, recommended: recommend(candidates, objective), stopReason };
}

function checkBounds(bounds: SearchBounds, objective: SearchObjective): void {
  const problems: string[] = [];
  if (!Number.isInteger(bounds.maxInstances) || bounds.maxInstances < 1)
    problems.push("maxInstances must be an integer of at least 1");
  if (!Number.isInteger(bounds.maxBatchSize) || bounds.maxBatchSize < 0)
    problems.push("maxBatchSize must be an integer of at least 0");
  if (bounds.queueDelaysUs.some((delay) => !Number.isInteger(delay) || delay < 0))
    problems.push("queueDelaysUs must be integers of at least 0");
  if (!(bounds.minGainPercent >= 0)) problems.push("minGainPercent must be at least 0");
  if (!Number.isInteger(bounds.maxCandidates) || bounds.maxCandidates < 1)
    problems.push("maxCandidates must be an integer of at least 1");
  if (!(bounds.maxDurationMs > 0)) problems.push("maxDurationMs must be above 0");
  if (!(objective.p99BudgetUs > 0)) problems.push("the p99 budget must be above 0");
  if (problems.length > 0) throw new RangeError(`invalid config search bounds: ${problems.join("; ")}`);
}

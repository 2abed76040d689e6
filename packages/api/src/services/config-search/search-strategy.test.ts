import { describe, expect, it } from "vitest";
import {
  DEFAULT_SEARCH_BOUNDS,
  candidateKey,
  paretoFront,
  runSearch,
  type CandidateMeasurement,
  type SearchBounds,
  type SearchCandidate,
  type SearchObjective,
} from "./search-strategy.js";

/**
 * A synthetic model: throughput grows with instances up to 2 (then flat),
 * with batch size up to 8 (then flat), and a queue delay adds its time to
 * p99. Latency grows with batch size.
 */
function synthetic(candidate: SearchCandidate): CandidateMeasurement {
  const instances = Math.min(candidate.instanceCount, 2);
  const batch = Math.max(1, Math.min(candidate.maxBatchSize, 8));
  const batching = candidate.dynamicBatching !== null ? 1.1 : 1;
  const preferred = candidate.dynamicBatching?.preferredBatchSizes.length ? 1.02 : 1;
  const throughput = 100 * instances * (1 + Math.log2(batch)) * batching * preferred;
  const latencyP99Us = 1000 * (1 + Math.log2(batch)) + (candidate.dynamicBatching?.maxQueueDelayUs ?? 0);
  return { throughput, latencyP99Us, concurrency: 4, costPer1000: (candidate.instanceCount * 1000) / throughput };
}

const start: SearchCandidate = { instanceCount: 1, maxBatchSize: 1, dynamicBatching: null };
const bounds: SearchBounds = { ...DEFAULT_SEARCH_BOUNDS, maxInstances: 8, maxBatchSize: 32, maxCandidates: 40 };
const throughputUnder = (p99BudgetUs: number): SearchObjective => ({ kind: "MAX_THROUGHPUT", p99BudgetUs });

describe("config search strategy", () => {
  it("climbs one dimension at a time and stops a dimension once gains fall under the threshold", async () => {
    const measured: SearchCandidate[] = [];
    const outcome = await runSearch(start, throughputUnder(10_000), bounds, async (candidate) => {
      measured.push(candidate);
      return synthetic(candidate);
    });
    expect(outcome.stopReason).toBe("completed");
    const instanceSteps = outcome.candidates
      .filter((c) => c.dimension === "instances")
      .map((c) => c.candidate.instanceCount);
    // 2 gains 100 %, 4 gains 0 %: the climb stops there, 8 is never measured.
    expect(instanceSteps).toEqual([2, 4]);
    const batchSteps = outcome.candidates
      .filter((c) => c.dimension === "maxBatchSize")
      .map((c) => c.candidate.maxBatchSize);
    // Flat above 8: 16 is measured and ends the climb; 32 is pruned.
    expect(batchSteps).toEqual([2, 4, 8, 16]);
    expect(outcome.candidates.length).toBeLessThan(20);
    expect(new Set(measured.map(candidateKey)).size).toBe(measured.length);
    const best = outcome.candidates[outcome.recommended!]!;
    expect(best.candidate.instanceCount).toBe(2);
    expect(best.candidate.maxBatchSize).toBe(8);
  });

  it("stops a dimension at the first candidate over the p99 budget and never recommends one", async () => {
    const outcome = await runSearch(start, throughputUnder(3500), bounds, async (candidate) => synthetic(candidate));
    const batchSteps = outcome.candidates
      .filter((c) => c.dimension === "maxBatchSize")
      .map((c) => c.candidate.maxBatchSize);
    // p99 at batch 4 is 3000 µs, at 8 4000 µs: over 3500, so the climb ends at 8.
    expect(batchSteps).toEqual([2, 4, 8]);
    const best = outcome.candidates[outcome.recommended!]!;
    expect(best.withinBudget).toBe(true);
    expect(best.measurement.latencyP99Us).toBeLessThanOrEqual(3500);
    expect(best.candidate.maxBatchSize).toBe(4);
    // A queue delay of 500 µs or more breaks the budget at batch 4 (3000 + 500 is not over; 2000 is).
    expect(outcome.candidates.filter((c) => !c.withinBudget).length).toBeGreaterThan(0);
  });

  it("recommends nothing when no candidate meets the budget", async () => {
    const outcome = await runSearch(start, throughputUnder(10), bounds, async (candidate) => synthetic(candidate));
    expect(outcome.recommended).toBeNull();
    // The first climb step over budget ends each dimension: a handful of measurements, not the grid.
    expect(outcome.candidates.length).toBeLessThanOrEqual(5);
  });

  it("ranks by cost per 1,000 inferences under the cost objective", async () => {
    const outcome = await runSearch(start, { kind: "MIN_COST", p99BudgetUs: 10_000 }, bounds, async (candidate) =>
      synthetic(candidate),
    );
    const best = outcome.candidates[outcome.recommended!]!;
    const cheapest = Math.min(
      ...outcome.candidates.filter((c) => c.withinBudget).map((c) => c.measurement.costPer1000!),
    );
    expect(best.measurement.costPer1000).toBe(cheapest);
    // Two instances double throughput at double cost: no saving, so the cost search stays at one.
    expect(best.candidate.instanceCount).toBe(1);
  });

  it("keeps to the candidate cap", async () => {
    const outcome = await runSearch(
      start,
      throughputUnder(10_000),
      { ...bounds, maxCandidates: 3 },
      async (candidate) => synthetic(candidate),
    );
    expect(outcome.candidates).toHaveLength(3);
    expect(outcome.stopReason).toBe("candidate-limit");
    expect(outcome.recommended).not.toBeNull();
  });

  it("keeps to the time cap with the clock it is given", async () => {
    let clock = 0;
    const outcome = await runSearch(
      start,
      throughputUnder(10_000),
      { ...bounds, maxDurationMs: 25_000 },
      async (candidate) => {
        clock += 10_000;
        return synthetic(candidate);
      },
      { now: () => clock },
    );
    expect(outcome.candidates).toHaveLength(3);
    expect(outcome.stopReason).toBe("time-limit");
  });

  it("skips the batching dimensions for a model that does not batch", async () => {
    const outcome = await runSearch(
      { instanceCount: 1, maxBatchSize: 0, dynamicBatching: null },
      throughputUnder(10_000),
      bounds,
      async (candidate) => synthetic(candidate),
    );
    expect(
      outcome.candidates.every((c) => c.candidate.maxBatchSize === 0 && c.candidate.dynamicBatching === null),
    ).toBe(true);
  });

  it("starts from the current config, clamped into the bounds", async () => {
    const seen: SearchCandidate[] = [];
    await runSearch(
      { instanceCount: 6, maxBatchSize: 64, dynamicBatching: null },
      throughputUnder(10_000),
      { ...bounds, maxInstances: 4, maxBatchSize: 8 },
      async (candidate) => {
        seen.push(candidate);
        return synthetic(candidate);
      },
    );
    expect(seen[0]).toEqual({ instanceCount: 4, maxBatchSize: 8, dynamicBatching: null });
    expect(seen.every((candidate) => candidate.instanceCount <= 4 && candidate.maxBatchSize <= 8)).toBe(true);
  });

  it("stops when aborted, with the abort's reason", async () => {
    const controller = new AbortController();
    const run = runSearch(
      start,
      throughputUnder(10_000),
      bounds,
      async (candidate) => {
        controller.abort(new Error("cancelled by test"));
        return synthetic(candidate);
      },
      { signal: controller.signal },
    );
    await expect(run).rejects.toThrow("cancelled by test");
  });

  it("refuses bounds that make no sense, naming them", async () => {
    await expect(
      runSearch(start, throughputUnder(0), { ...bounds, maxCandidates: 0 }, async (candidate) => synthetic(candidate)),
    ).rejects.toThrow(/maxCandidates must be an integer of at least 1; the p99 budget must be above 0/);
  });
});

describe("Pareto front", () => {
  it("keeps the points no other point beats on both throughput and p99, by ascending p99", () => {
    const points = [
      { id: "a", throughput: 100, latencyP99Us: 1000 },
      { id: "b", throughput: 90, latencyP99Us: 1500 }, // dominated by a
      { id: "c", throughput: 200, latencyP99Us: 2000 },
      { id: "d", throughput: 200, latencyP99Us: 2500 }, // dominated by c (same throughput, slower)
      { id: "e", throughput: 300, latencyP99Us: 5000 },
      { id: "f", throughput: 0, latencyP99Us: 500 }, // served nothing
      { id: "g", throughput: 50, latencyP99Us: null },
    ];
    expect(paretoFront(points).map((point) => point.id)).toEqual(["a", "c", "e"]);
  });

  it("is empty without measured points", () => {
    expect(paretoFront([])).toEqual([]);
  });
});

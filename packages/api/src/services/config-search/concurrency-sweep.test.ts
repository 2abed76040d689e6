import { describe, expect, it } from "vitest";
import { concurrencyLevels, representativeStep, sweepConcurrency, type SweepStep } from "./concurrency-sweep.js";

const step = (concurrency: number, throughput: number, latencyP99Us: number | null): SweepStep => ({ concurrency, throughput, latencyP99Us, requests: 10, errors: 0 });

describe("concurrency sweep", () => {
  it("doubles up to the maximum, which is included", () => {
    expect(concurrencyLevels(1)).toEqual([1]);
    expect(concurrencyLevels(8)).toEqual([1, 2, 4, 8]);
    expect(concurrencyLevels(6)).toEqual([1, 2, 4, 6]);
  });

  it("stops once throughput stops rising", async () => {
    const throughputAt: Record<number, number> = { 1: 100, 2: 190, 4: 195, 8: 400 };
    const steps = await sweepConcurrency({ maxConcurrency: 8, minGainPercent: 5, p99BudgetUs: 1e9 }, async (c) => step(c, throughputAt[c]!, 1000 * c));
    expect(steps.map((s) => s.concurrency)).toEqual([1, 2, 4]);
  });

  it("stops at the first step over the p99 budget and reads the best step within it", async () => {
    const steps = await sweepConcurrency({ maxConcurrency: 16, minGainPercent: 5, p99BudgetUs: 2500 }, async (c) => step(c, 100 * c, 1000 * c));
    expect(steps.map((s) => s.concurrency)).toEqual([1, 2, 4]);
    expect(representativeStep(steps, 2500)?.concurrency).toBe(2);
  });

  it("falls back to the lowest concurrency when no step is within budget", () => {
    expect(representativeStep([step(1, 100, 9000), step(2, 150, 12000)], 1000)?.concurrency).toBe(1);
    expect(representativeStep([], 1000)).toBeUndefined();
  });
});

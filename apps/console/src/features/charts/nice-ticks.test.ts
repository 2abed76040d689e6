import { describe, expect, it } from "vitest";
import { niceTicks } from "./nice-ticks";

describe("chart axis ticks", () => {
  it("are evenly spaced round numbers from 0 to a round top at or above the largest value", () => {
    expect(niceTicks(4800)).toEqual([0, 1000, 2000, 3000, 4000, 5000]);
    expect(niceTicks(5000)).toEqual([0, 1000, 2000, 3000, 4000, 5000]);
    expect(niceTicks(3)).toEqual([0, 1, 2, 3]);
    expect(niceTicks(1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(7)).toEqual([0, 2, 4, 6, 8]);
    expect(niceTicks(0.004)).toEqual([0, 0.001, 0.002, 0.003, 0.004]);
    expect(niceTicks(0.3)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(niceTicks(12.5)).toEqual([0, 2.5, 5, 7.5, 10, 12.5]);
  });

  it("never gives more ticks than asked, and the steps are all equal", () => {
    for (const max of [0.013, 0.77, 1.5, 9.99, 42, 101, 999, 1234, 86_400, 3.2e7]) {
      const ticks = niceTicks(max);
      expect(ticks.length, String(max)).toBeLessThanOrEqual(6);
      expect(ticks.at(-1)!, String(max)).toBeGreaterThanOrEqual(max);
      const steps = ticks.slice(1).map((tick, index) => tick - ticks[index]!);
      for (const step of steps) expect(step).toBeCloseTo(steps[0]!, 9);
      expect(ticks[0]).toBe(0);
    }
  });

  it("has an axis for a chart without values", () => {
    expect(niceTicks(0)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(Number.NaN)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });
});

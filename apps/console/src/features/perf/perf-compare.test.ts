import { describe, expect, it } from "vitest";
import { changeText, compareSteps } from "./perf-compare";

const step = (concurrency: number, throughput: number, p50: number | null, p99: number | null, batchSize = 1) => ({
  concurrency,
  batchSize,
  throughput,
  latencyP50Us: p50,
  latencyP99Us: p99,
});

describe("compareSteps", () => {
  it("pairs the steps by concurrency and batch size, with the change from A to B", () => {
    const rows = compareSteps(
      [step(1, 100, 1000, 2000), step(2, 150, 1500, 4000)],
      [step(2, 180, 1200, 5000), step(1, 80, 1000, null), step(4, 200, 2000, 6000)],
    );
    expect(rows.map((row) => row.concurrency)).toEqual([1, 2, 4]);
    expect(rows[0]).toEqual({
      concurrency: 1,
      batchSize: 1,
      throughput: { a: 100, b: 80, changePercent: -20 },
      p50Us: { a: 1000, b: 1000, changePercent: 0 },
      p99Us: { a: 2000, b: null, changePercent: null },
    });
    expect(rows[1]!.throughput.changePercent).toBeCloseTo(20, 9);
    expect(rows[1]!.p99Us.changePercent).toBeCloseTo(25, 9);
    // Only B measured c=4: A's figures are missing, and there is no change to give.
    expect(rows[2]).toMatchObject({ throughput: { a: null, b: 200, changePercent: null } });
  });

  it("keeps batch sizes apart and gives no change from a zero", () => {
    const rows = compareSteps([step(1, 0, 10, 10, 1), step(1, 50, 10, 10, 4)], [step(1, 30, 10, 10, 1)]);
    expect(rows.map((row) => [row.batchSize, row.concurrency])).toEqual([
      [1, 1],
      [4, 1],
    ]);
    expect(rows[0]!.throughput).toEqual({ a: 0, b: 30, changePercent: null });
  });
});

describe("changeText", () => {
  it("signs the change with one decimal, a true minus, and a dash when there is none", () => {
    expect(changeText(12.345)).toBe("+12.3 %");
    expect(changeText(-3)).toBe("−3.0 %");
    expect(changeText(0.01)).toBe("0.0 %");
    expect(changeText(null)).toBe("—");
  });
});

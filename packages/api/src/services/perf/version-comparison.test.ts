import { describe, expect, it } from "vitest";
import { compareVersionList, compareVersionReports, type ComparableReport } from "./version-comparison.js";

const report = (version: string, points: Array<[number, number, number | null]>): ComparableReport => ({
  version,
  samples: points.map(([concurrency, throughput, latencyP99Us]) => ({ concurrency, throughput, latencyP99Us })),
});

describe("compareVersionReports", () => {
  it("compares at the newer report's best common concurrency", () => {
    const v2 = report("2", [
      [1, 100, 1000],
      [2, 180, 1200],
      [4, 300, 1500],
      [8, 500, 2000],
    ]);
    const v3 = report("3", [
      [1, 90, 1100],
      [2, 170, 1300],
      [4, 290, 1700],
      [8, 410, 2500],
      [16, 430, 5000],
    ]);
    const comparison = compareVersionReports(v2, v3)!;
    // c16 is the newer report's best but v2 did not measure it: c8 is the best common one.
    expect(comparison).toEqual({
      version: "3",
      previousVersion: "2",
      concurrency: 8,
      throughput: 410,
      previousThroughput: 500,
      throughputDeltaPercent: -18,
      p99DeltaPercent: 25,
      text: "v3 is 18 % slower at c8 than v2 (p99 +25 %)",
    });
  });

  it("says faster, about as fast, and leaves p99 out when unknown", () => {
    expect(compareVersionReports(report("1", [[4, 200, 1000]]), report("2", [[4, 250, 800]]))!.text).toBe(
      "v2 is 25 % faster at c4 than v1 (p99 −20 %)",
    );
    expect(compareVersionReports(report("1", [[4, 200, 1000]]), report("2", [[4, 201, 1000]]))!.text).toBe(
      "v2 is about as fast at c4 as v1 (p99 +0 %)",
    );
    expect(compareVersionReports(report("1", [[1, 200, null]]), report("2", [[1, 100, 900]]))).toMatchObject({
      p99DeltaPercent: null,
      text: "v2 is 50 % slower at c1 than v1",
    });
  });

  it("has no comparison without a common measured concurrency", () => {
    expect(compareVersionReports(report("1", [[1, 100, 1000]]), report("2", [[2, 100, 1000]]))).toBeNull();
    // A step where every request failed (throughput 0) is no basis either.
    expect(compareVersionReports(report("1", [[1, 0, null]]), report("2", [[1, 100, 1000]]))).toBeNull();
    expect(compareVersionReports(report("1", []), report("2", []))).toBeNull();
  });
});

describe("compareVersionList", () => {
  it("compares each version with the nearest lower version that has a report, numerically", () => {
    const comparisons = compareVersionList([
      report("10", [[1, 110, 100]]),
      report("2", [[1, 100, 100]]),
      report("9", [[2, 50, 100]]),
    ]);
    // 9 has no common concurrency with 2; 10 compares with 9 (nothing in common either) -> nothing; so only pairs that share one count.
    expect([...comparisons.keys()]).toEqual([]);
    const list = compareVersionList([
      report("10", [[1, 110, 100]]),
      report("2", [[1, 100, 100]]),
      report("9", [[1, 50, 100]]),
    ]);
    expect(list.get("9")!.text).toBe("v9 is 50 % slower at c1 than v2 (p99 +0 %)");
    expect(list.get("10")!.text).toBe("v10 is 120 % faster at c1 than v9 (p99 +0 %)");
    expect(list.has("2")).toBe(false);
  });
});

import type { ModelStatistics } from "@operon/protocol/inference";
import { describe, expect, it } from "vitest";
import { ServerStatsProbe, addSnapshots, diffSnapshots, snapshotOf, summarizeServerStats } from "./server-stats.js";

function entry(version: string, n: number, batches: Array<[number, number]> = [[1, n]]): ModelStatistics {
  const d = (nsEach: number) => ({ count: n, ns: n * nsEach });
  return {
    name: "m",
    version,
    last_inference: 0,
    inference_count: n,
    execution_count: n,
    inference_stats: {
      success: d(10_000),
      fail: { count: 0, ns: 0 },
      queue: d(1_000),
      compute_input: d(2_000),
      compute_infer: d(5_500),
      compute_output: d(500),
      cache_hit: { count: 0, ns: 0 },
      cache_miss: { count: 0, ns: 0 },
    },
    response_stats: {},
    batch_stats: batches.map(([size, count]) => ({
      batch_size: size,
      compute_input: { count, ns: 0 },
      compute_infer: { count, ns: 0 },
      compute_output: { count, ns: 0 },
    })),
    memory_usage: [],
  };
}

describe("server statistics deltas", () => {
  it("sums versions, diffs two reads and averages per request in µs", () => {
    const before = snapshotOf([
      entry("1", 10),
      entry("2", 5, [
        [1, 3],
        [4, 2],
      ]),
    ]);
    const after = snapshotOf([
      entry("1", 30),
      entry("2", 5, [
        [1, 3],
        [4, 6],
      ]),
    ]);
    const delta = diffSnapshots(before, after);
    expect(delta.success.count).toBe(20);
    expect(summarizeServerStats(delta)).toEqual({
      requests: 20,
      queueUs: 1,
      computeInputUs: 2,
      computeInferUs: 5.5,
      computeOutputUs: 0.5,
      batchSizes: { "1": 20, "4": 4 },
    });
  });

  it("merges window deltas and treats a counter reset as starting from zero", () => {
    const a = diffSnapshots(snapshotOf([entry("1", 0)]), snapshotOf([entry("1", 4)]));
    const b = diffSnapshots(snapshotOf([entry("1", 100)]), snapshotOf([entry("1", 6)]));
    const merged = addSnapshots(a, b);
    expect(merged.success.count).toBe(10);
    expect(merged.batches).toEqual({ "1": 10 });
    expect(summarizeServerStats(merged).computeInferUs).toBe(5.5);
  });

  it("averages the response cache's hits and misses per hit and per miss, across windows", () => {
    const cached = (hits: number, misses: number): ModelStatistics => {
      const base = entry("1", misses);
      base.inference_stats.cache_hit = { count: hits, ns: hits * 3_000 };
      base.inference_stats.cache_miss = { count: misses, ns: misses * 12_000 };
      return base;
    };
    const first = diffSnapshots(snapshotOf([cached(0, 0)]), snapshotOf([cached(6, 4)]));
    const second = diffSnapshots(snapshotOf([cached(6, 4)]), snapshotOf([cached(10, 5)]));
    expect(summarizeServerStats(addSnapshots(first, second))).toMatchObject({
      cacheHits: 10,
      cacheHitUs: 3,
      cacheMisses: 5,
      cacheMissUs: 12,
    });
  });

  it("averages to 0 when nothing ran", () => {
    const none = diffSnapshots(snapshotOf([entry("1", 3)]), snapshotOf([entry("1", 3)]));
    expect(summarizeServerStats(none)).toEqual({
      requests: 0,
      queueUs: 0,
      computeInputUs: 0,
      computeInferUs: 0,
      computeOutputUs: 0,
      batchSizes: {},
    });
  });

  it("the probe gives up quietly on a server without statistics", async () => {
    let calls = 0;
    const probe = new ServerStatsProbe({
      modelStatistics: async () => {
        calls += 1;
        throw new Error("501 statistics not supported");
      },
    });
    expect(await probe.snapshot()).toBeUndefined();
    expect(await probe.snapshot()).toBeUndefined();
    expect(calls).toBe(1);
  });
});

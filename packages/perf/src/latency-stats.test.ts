import { describe, expect, it } from "vitest";
import { LatencyRecorder, percentileOfSorted, summarizeLatencies } from "./latency-stats.js";

function shuffled(values: number[]): number[] {
  const out = [...values];
  // Deterministic shuffle (LCG) so the test does not depend on Math.random.
  let seed = 42;
  for (let i = out.length - 1; i > 0; i -= 1) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const j = seed % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe("latency percentiles", () => {
  it("uses nearest rank on 1..100 regardless of recording order", () => {
    const recorder = new LatencyRecorder(8);
    for (const value of shuffled(Array.from({ length: 100 }, (_, i) => i + 1))) recorder.record(value);
    expect(recorder.count).toBe(100);
    expect(recorder.summarize()).toEqual({ p50: 50, p90: 90, p95: 95, p99: 99, avg: 50.5, min: 1, max: 100 });
  });

  it("picks the value at ceil(p·n) on 1..1000", () => {
    const summary = summarizeLatencies(Array.from({ length: 1000 }, (_, i) => (i + 1) * 10));
    expect(summary).toMatchObject({ p50: 5000, p90: 9000, p95: 9500, p99: 9900, min: 10, max: 10000, avg: 5005 });
  });

  it("handles a single value, ties and an empty set", () => {
    expect(summarizeLatencies([7])).toEqual({ p50: 7, p90: 7, p95: 7, p99: 7, avg: 7, min: 7, max: 7 });
    expect(summarizeLatencies([5, 5, 5, 100])).toMatchObject({ p50: 5, p90: 100, p99: 100, avg: 28.8 });
    expect(summarizeLatencies([])).toEqual({ p50: 0, p90: 0, p95: 0, p99: 0, avg: 0, min: 0, max: 0 });
  });

  it("keeps p50 <= p90 <= p95 <= p99 on skewed data", () => {
    const values = Array.from({ length: 5000 }, (_, i) => Math.exp((i % 97) / 10));
    const s = summarizeLatencies(values);
    expect(s.min).toBeLessThanOrEqual(s.p50);
    expect(s.p50).toBeLessThanOrEqual(s.p90);
    expect(s.p90).toBeLessThanOrEqual(s.p95);
    expect(s.p95).toBeLessThanOrEqual(s.p99);
    expect(s.p99).toBeLessThanOrEqual(s.max);
  });

  it("rounds to 0.1 µs and does not reorder the recorded values", () => {
    const recorder = new LatencyRecorder(1);
    for (const value of [3.14159, 1.25, 2.96]) recorder.record(value);
    expect(recorder.summarize()).toMatchObject({ min: 1.3, max: 3.1, p50: 3 });
    expect(Array.from(recorder.view())).toEqual([3.14159, 1.25, 2.96]);
  });

  it("grows past its initial capacity and merges recorders", () => {
    const a = new LatencyRecorder(2);
    const b = new LatencyRecorder(2);
    for (let i = 1; i <= 10; i += 1) a.record(i);
    for (let i = 11; i <= 20; i += 1) b.record(i);
    a.addAll(b);
    expect(a.count).toBe(20);
    expect(a.mean()).toBe(10.5);
    expect(a.summarize()).toMatchObject({ min: 1, max: 20, p50: 10 });
    expect(b.count).toBe(10);
  });

  it("percentileOfSorted clamps p to the ends", () => {
    expect(percentileOfSorted([1, 2, 3], 0)).toBe(1);
    expect(percentileOfSorted([1, 2, 3], 100)).toBe(3);
    expect(percentileOfSorted([], 50)).toBe(0);
  });
});

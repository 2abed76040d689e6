import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { LatencySummaries, type SummaryFamily } from "./latency-summaries.js";

const REQUEST: SummaryFamily = { series: "request", name: "nv_inference_request_summary_us", help: "request" };
const COMPUTE: SummaryFamily = { series: "computeInfer", name: "nv_inference_compute_infer_summary_us", help: "c" };

/** A clock the test steps by hand, ms. */
function steppedClock(): { now: () => number; advance(ms: number): void } {
  let at = 1_000;
  return { now: () => at, advance: (ms) => (at += ms) };
}

/** A request of `us` µs (queue and compute the same), as the statistics record it (ns). */
function latency(us: number, cached = false): { requestNs: number; queueNs: number; computeInferNs?: number } {
  return cached
    ? { requestNs: us * 1000, queueNs: us * 1000 }
    : { requestNs: us * 1000, queueNs: us * 1000, computeInferNs: us * 1000 };
}

function byQuantile(values: ReturnType<LatencySummaries["collect"]>): Record<string, number> {
  const result: Record<string, number> = {};
  for (const value of values) {
    if (value.metricName === undefined) result[String(value.labels["quantile"])] = value.value;
    else result[value.metricName.replace(/^.*_summary_us_/, "")] = value.value;
  }
  return result;
}

describe("LatencySummaries", () => {
  it("exports nearest-rank quantiles of the window and exact totals", () => {
    const summaries = new LatencySummaries();
    // 1..100 µs in a shuffled order: the quantiles are the ranks, whatever the order of arrival.
    const values = Array.from({ length: 100 }, (_, i) => ((i * 37) % 100) + 1);
    for (const us of values) summaries.record("m", "1", latency(us));
    expect(byQuantile(summaries.collect(REQUEST))).toEqual({
      "0.5": 50,
      "0.9": 90,
      "0.95": 95,
      "0.99": 99,
      sum: 5050,
      count: 100,
    });
  });

  it("keeps the latest `capacity` latencies for the quantiles, but counts every request", () => {
    const summaries = new LatencySummaries({ capacity: 10 });
    for (let us = 1; us <= 1000; us++) summaries.record("m", "1", latency(us));
    const exported = byQuantile(summaries.collect(REQUEST));
    // The kept ones are 991..1000.
    expect(exported["0.5"]).toBe(995);
    expect(exported["0.99"]).toBe(1000);
    expect(exported["count"]).toBe(1000);
    expect(exported["sum"]).toBe(500_500);
  });

  it("leaves latencies older than the window out of the quantiles; NaN once none is left", () => {
    const clock = steppedClock();
    const summaries = new LatencySummaries({ windowMs: 60_000, now: clock.now });
    for (let i = 0; i < 10; i++) summaries.record("m", "1", latency(5_000));
    clock.advance(30_000);
    for (let i = 0; i < 10; i++) summaries.record("m", "1", latency(100));
    expect(byQuantile(summaries.collect(REQUEST))["0.99"]).toBe(5_000);
    clock.advance(30_001);
    // The slow ten are 60.001 s old now: only the fast ones count.
    expect(byQuantile(summaries.collect(REQUEST))["0.99"]).toBe(100);
    clock.advance(30_000);
    const idle = byQuantile(summaries.collect(REQUEST));
    expect(idle["0.5"]).toBeNaN();
    expect(idle["count"]).toBe(20);
  });

  it("still tells the window's edge after a year of uptime (times are kept as 32-bit seconds)", () => {
    const clock = steppedClock();
    const summaries = new LatencySummaries({ windowMs: 60_000, now: clock.now });
    clock.advance(365 * 24 * 3600 * 1000);
    summaries.record("m", "1", latency(7_000));
    clock.advance(50_000);
    summaries.record("m", "1", latency(300));
    expect(byQuantile(summaries.collect(REQUEST))["0.99"]).toBe(7_000);
    clock.advance(15_000);
    expect(byQuantile(summaries.collect(REQUEST))["0.99"]).toBe(300);
  });

  it("gives a version a series only once it has a latency of it, and drops it on forget", () => {
    const summaries = new LatencySummaries();
    summaries.record("cached", "1", latency(10, true));
    summaries.record("m", "2", latency(10));
    const computeLabels = summaries.collect(COMPUTE).map((value) => value.labels["model"]);
    expect(new Set(computeLabels)).toEqual(new Set(["m"]));
    summaries.forget("m", "2");
    expect(summaries.collect(REQUEST).map((value) => value.labels["model"])).not.toContain("m");
    expect(summaries.collect(COMPUTE)).toEqual([]);
  });

  it("writes Prometheus text in prom-client's summary format through a registry", async () => {
    const registry = new Registry();
    const summaries = new LatencySummaries();
    summaries.register(registry, REQUEST);
    summaries.record("add_sub", "1", latency(250));
    const text = await registry.metrics();
    expect(text).toContain("# TYPE nv_inference_request_summary_us summary");
    expect(text).toContain('nv_inference_request_summary_us{quantile="0.5",model="add_sub",version="1"} 250');
    expect(text).toContain('nv_inference_request_summary_us_sum{model="add_sub",version="1"} 250');
    expect(text).toContain('nv_inference_request_summary_us_count{model="add_sub",version="1"} 1');
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain("add_sub");
  });
});

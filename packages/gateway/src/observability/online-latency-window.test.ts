import { describe, expect, it } from "vitest";
import { OnlineLatencyWindow } from "./online-latency-window.js";

describe("online latency window", () => {
  it("reports the p50 and p99 of the requests that finished within the window only", () => {
    const window = new OnlineLatencyWindow(1024);
    // 100 requests of 1..100 ms finishing at t = 1000..1099 ms, then one slow old one is out of a 50 ms window.
    for (let i = 1; i <= 100; i += 1) window.record(i * 1e6, 999 + i);
    expect(window.quantiles(1000, 1100)).toEqual({ window_ms: 1000, count: 100, p50_us: 50_000, p99_us: 99_000 });
    const recent = window.quantiles(50, 1100);
    expect(recent.count).toBe(50);
    expect(recent.p50_us).toBe(75_000);
    expect(window.quantiles(1000, 5000)).toEqual({ window_ms: 1000, count: 0, p50_us: null, p99_us: null });
  });

  it("keeps only its capacity of latest requests", () => {
    const window = new OnlineLatencyWindow(8);
    for (let i = 1; i <= 20; i += 1) window.record(i * 1000, i);
    const all = window.quantiles(1000, 20);
    expect(all.count).toBe(8);
    expect(all.p99_us).toBe(20);
    expect(all.p50_us).toBe(16);
  });
});

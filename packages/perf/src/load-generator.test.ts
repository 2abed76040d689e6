import { describe, expect, it } from "vitest";
import { LatencyRecorder } from "./latency-stats.js";
import { intervalSource, isStable, measureStep, type MeasurementPolicy } from "./load-generator.js";

/** A fake infer() that answers after delayMs and tracks how many calls are in flight. */
function fakeInfer(delayMs: number, fail?: (call: number) => string | undefined) {
  const state = { calls: 0, inFlight: 0, maxInFlight: 0, samples: [] as number[] };
  const infer = (): Promise<void> => {
    state.calls += 1;
    const call = state.calls;
    state.inFlight += 1;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    return new Promise<void>((resolve, reject) =>
      setTimeout(() => {
        state.inFlight -= 1;
        const message = fail?.(call);
        if (message !== undefined) reject(new Error(message));
        else resolve();
      }, delayMs),
    );
  };
  return { infer, state };
}

const policy = (overrides: Partial<MeasurementPolicy> = {}): MeasurementPolicy => ({
  measurementIntervalMs: 60,
  stabilityPercentage: 10,
  maxTrials: 2,
  batchSize: 1,
  ...overrides,
});

describe("measureStep in concurrency mode", () => {
  it("keeps exactly N requests in flight and drains them at the end", async () => {
    const { infer, state } = fakeInfer(5);
    const sampled: number[] = [];
    const timer = setInterval(() => sampled.push(state.inFlight), 3);
    // Sample while the windows run, not while the step drains at the end.
    const step = await measureStep(infer, { kind: "concurrency", concurrency: 4 }, policy(), {
      onWindow: (_window, index) => index === 1 && clearInterval(timer),
    });
    expect(state.maxInFlight).toBe(4);
    expect(sampled.length).toBeGreaterThan(5);
    expect(sampled.every((n) => n === 4)).toBe(true);
    expect(state.inFlight).toBe(0);
    expect(step.windows).toHaveLength(2);
    expect(step.stable).toBe(false); // two windows can never make three stable ones
    expect(step.mergedFrom).toBe(0);
    for (const window of step.windows) {
      expect(window.requests).toBeGreaterThan(0);
      expect(window.latencies.count).toBe(window.requests);
      expect(window.durationMs).toBeGreaterThanOrEqual(55);
    }
  });

  it("stops as soon as three windows are stable and merges the last three", async () => {
    const { infer } = fakeInfer(2);
    const step = await measureStep(
      infer,
      { kind: "concurrency", concurrency: 2 },
      policy({ maxTrials: 10, stabilityPercentage: 80 }),
    );
    expect(step.stable).toBe(true);
    expect(step.windows.length).toBeGreaterThanOrEqual(3);
    expect(step.windows.length).toBeLessThan(10);
    expect(step.mergedFrom).toBe(step.windows.length - 3);
  });

  it("brackets every window with server snapshots, each window's end being the next one's start", async () => {
    const { infer } = fakeInfer(2);
    let reads = 0;
    const step = await measureStep(
      infer,
      { kind: "concurrency", concurrency: 1 },
      policy({ maxTrials: 3, measurementIntervalMs: 30 }),
      {
        snapshot: async () => ++reads,
      },
    );
    expect(step.windows.map((w) => [w.serverBefore, w.serverAfter])).toEqual([
      [1, 2],
      [2, 3],
      [3, 4],
    ]);
  });

  it("counts failures and keeps up to 5 distinct messages", async () => {
    const { infer } = fakeInfer(1, (call) => (call % 2 === 0 ? `boom ${call % 8}` : undefined));
    const step = await measureStep(infer, { kind: "concurrency", concurrency: 2 }, policy({ maxTrials: 1 }));
    const window = step.windows[0]!;
    expect(window.errors).toBeGreaterThan(0);
    expect(window.requests).toBeGreaterThan(0);
    expect(window.latencies.count).toBe(window.requests);
    expect(new Set(step.errorSamples)).toEqual(new Set(["boom 0", "boom 2", "boom 4", "boom 6"]));
  });

  it("stops early on abort and drops the partial window", async () => {
    const { infer, state } = fakeInfer(2);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 90);
    const step = await measureStep(infer, { kind: "concurrency", concurrency: 2 }, policy({ maxTrials: 10 }), {
      signal: controller.signal,
    });
    expect(step.aborted).toBe(true);
    expect(step.windows).toHaveLength(1);
    expect(state.inFlight).toBe(0);
  });
});

describe("measureStep in request-count mode", () => {
  it("sends exactly the requested count as one window", async () => {
    const { infer, state } = fakeInfer(2);
    const step = await measureStep(infer, { kind: "concurrency", concurrency: 3 }, policy({ requestCount: 25 }));
    expect(state.calls).toBe(25);
    expect(state.maxInFlight).toBe(3);
    expect(step.windows).toHaveLength(1);
    expect(step.windows[0]!.requests).toBe(25);
    expect(step.stable).toBe(true);
  });
});

describe("measureStep in request-rate mode", () => {
  it("sends on schedule whatever the answers do (open loop)", async () => {
    // 200 req/s with 50 ms answers: a closed loop of 1 would reach 20 req/s; an open loop keeps ~10 in flight.
    const { infer, state } = fakeInfer(50);
    const started = performance.now();
    const step = await measureStep(
      infer,
      { kind: "request-rate", requestRate: 200, distribution: "constant" },
      policy({ requestCount: 30 }),
    );
    const elapsed = performance.now() - started;
    expect(state.calls).toBe(30);
    expect(step.windows[0]!.requests).toBe(30);
    expect(state.maxInFlight).toBeGreaterThanOrEqual(5);
    // 30 sends at 5 ms intervals take ~145 ms, plus the last answer's 50 ms.
    expect(elapsed).toBeGreaterThanOrEqual(180);
  });

  it("measures time windows at a rate", async () => {
    const { infer } = fakeInfer(1);
    const step = await measureStep(
      infer,
      { kind: "request-rate", requestRate: 300, distribution: "poisson" },
      policy({ measurementIntervalMs: 100 }),
    );
    const total = step.windows.reduce((sum, w) => sum + w.requests, 0);
    // ~60 expected over 200 ms; wide bounds for a loaded machine.
    expect(total).toBeGreaterThan(20);
    expect(total).toBeLessThan(120);
  });
});

describe("stability and intervals", () => {
  const w = (throughputInferPerSec: number, avgLatencyUs: number) => ({ throughputInferPerSec, avgLatencyUs });

  it("needs the last three windows within ±p% of their mean on throughput and latency", () => {
    expect(isStable([w(100, 10), w(100, 10)], 10)).toBe(false);
    expect(isStable([w(100, 10), w(105, 10), w(95, 10)], 10)).toBe(true);
    expect(isStable([w(50, 99), w(100, 10), w(105, 10), w(95, 10)], 10)).toBe(true);
    expect(isStable([w(100, 10), w(130, 10), w(95, 10)], 10)).toBe(false);
    expect(isStable([w(100, 10), w(100, 14), w(100, 10)], 10)).toBe(false);
    expect(isStable([w(0, 0), w(0, 0), w(0, 0)], 10)).toBe(false);
  });

  it("constant intervals are 1/rate; Poisson ones average 1/rate", () => {
    expect(intervalSource(250, "constant")()).toBe(4);
    let state = 7;
    const random = () => ((state = (state * 16807) % 2147483647) - 1) / 2147483646;
    const next = intervalSource(100, "poisson", random);
    const samples = Array.from({ length: 20000 }, next);
    const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
    expect(mean).toBeGreaterThan(9.5);
    expect(mean).toBeLessThan(10.5);
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(0);
  });

  it("window latencies are recorded in µs", async () => {
    const { infer } = fakeInfer(20);
    const step = await measureStep(infer, { kind: "concurrency", concurrency: 1 }, policy({ requestCount: 3 }));
    const latencies: LatencyRecorder = step.windows[0]!.latencies;
    expect(latencies.summarize().min).toBeGreaterThanOrEqual(15_000);
  });
});

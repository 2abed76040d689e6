import { describe, expect, it } from "vitest";
import { LatencyRecorder } from "./latency-stats.js";
import type { StepMeasurement, WindowMeasurement } from "./load-generator.js";
import { PERF_REPORT_SCHEMA_VERSION, type PerfReport, parsePerfReport } from "./perf-report.js";
import { formatPerfReport, summaryTable } from "./perf-table.js";
import { stepOf } from "./run-perf.js";
import { type ServerStatsSnapshot, emptySnapshot } from "./server-stats.js";

function snapshot(requests: number): ServerStatsSnapshot {
  const s = emptySnapshot();
  s.success = { count: requests, ns: requests * 900_000 };
  s.queue = { count: requests, ns: requests * 100_000 };
  s.computeInfer = { count: requests, ns: requests * 700_000 };
  s.batches = { "2": requests };
  return s;
}

function window(
  latenciesUs: number[],
  errors: number,
  before: number,
  after: number,
): WindowMeasurement<ServerStatsSnapshot> {
  const latencies = new LatencyRecorder();
  for (const value of latenciesUs) latencies.record(value);
  return {
    durationMs: 1000,
    requests: latenciesUs.length,
    errors,
    latencies,
    serverBefore: snapshot(before),
    serverAfter: snapshot(after),
  };
}

const measurement: StepMeasurement<ServerStatsSnapshot> = {
  // The first window (ramp-up) is not merged: figures come from the last three.
  windows: [
    window([9000], 1, 0, 1),
    window([1000, 2000], 0, 1, 3),
    window([3000, 4000], 0, 3, 5),
    window([5000, 6000], 0, 5, 7),
  ],
  mergedFrom: 1,
  stable: true,
  errorSamples: ["HTTP 500: boom"],
  aborted: false,
};

function report(): PerfReport {
  return {
    schemaVersion: PERF_REPORT_SCHEMA_VERSION,
    model: "toy",
    version: "1",
    protocol: "http",
    mode: "concurrency",
    startedAt: "2026-01-01T00:00:00.000Z",
    finishedAt: "2026-01-01T00:00:10.000Z",
    config: {
      url: "localhost:8000",
      batchSize: 2,
      maxBatchSize: 8,
      inputData: "random",
      shapes: {},
      binaryData: true,
      measurementIntervalMs: 1000,
      stabilityPercentage: 10,
      maxTrials: 10,
      concurrencyRange: { start: 4, end: 4, step: 1 },
      inputs: [{ name: "X", datatype: "FP32", shape: [2, 4] }],
    },
    steps: [stepOf({ kind: "concurrency", concurrency: 4 }, measurement, 2)],
  };
}

describe("PerfStep from a measurement", () => {
  it("merges the last windows: throughput, latency percentiles, errors, server averages", () => {
    const step = report().steps[0]!;
    expect(step).toMatchObject({
      concurrency: 4,
      throughputInferPerSec: 4, // 6 requests × batch 2 over 3 s
      throughputRequestsPerSec: 2,
      latencyUs: { p50: 3000, p90: 6000, p95: 6000, p99: 6000, avg: 3500, min: 1000, max: 6000 },
      requests: 6,
      errors: 0,
      errorSamples: ["HTTP 500: boom"],
      server: {
        requests: 6,
        queueUs: 100,
        computeInputUs: 0,
        computeInferUs: 700,
        computeOutputUs: 0,
        batchSizes: { "2": 6 },
      },
      stable: true,
    });
    expect(step.requestRate).toBeUndefined();
    expect(step.windows.map((w) => [w.requests, w.errors, w.merged])).toEqual([
      [1, 1, false],
      [2, 0, true],
      [2, 0, true],
      [2, 0, true],
    ]);
    expect(step.windows[1]).toMatchObject({ durationMs: 1000, throughputInferPerSec: 4, avgLatencyUs: 1500 });
  });

  it("leaves server out when a merged window has no statistics, and labels request-rate steps", () => {
    const partial = {
      ...measurement,
      windows: measurement.windows.map((w, i) => (i === 2 ? { ...w, serverAfter: undefined } : w)),
    };
    const step = stepOf({ kind: "request-rate", requestRate: 50, distribution: "poisson" }, partial, 1);
    expect(step.server).toBeUndefined();
    expect(step.requestRate).toBe(50);
    expect(step.concurrency).toBeUndefined();
  });
});

describe("PerfReport schema", () => {
  it("survives a JSON round trip and passes its own validation", () => {
    const original = report();
    const parsed = parsePerfReport(JSON.parse(JSON.stringify(original)));
    expect(parsed).toEqual(original);
    expect(Object.keys(parsed)).toEqual([
      "schemaVersion",
      "model",
      "version",
      "protocol",
      "mode",
      "startedAt",
      "finishedAt",
      "config",
      "steps",
    ]);
    expect(Object.keys(parsed.steps[0]!).sort()).toEqual(
      [
        "concurrency",
        "throughputInferPerSec",
        "throughputRequestsPerSec",
        "latencyUs",
        "requests",
        "errors",
        "errorSamples",
        "server",
        "stable",
        "windows",
      ].sort(),
    );
  });

  it("refuses other schema versions and malformed steps, naming the field", () => {
    expect(() => parsePerfReport({ ...report(), schemaVersion: 2 })).toThrow(/unsupported perf report schemaVersion 2/);
    expect(() => parsePerfReport(null)).toThrow(/report must be an object/);
    const broken = JSON.parse(JSON.stringify(report())) as { steps: Array<{ latencyUs: { p99?: unknown } }> };
    delete broken.steps[0]!.latencyUs.p99;
    expect(() => parsePerfReport(broken)).toThrow("steps[0].latencyUs.p99 must be a finite number");
  });
});

describe("perf table", () => {
  it("prints perf_analyzer's summary lines and an aligned table", () => {
    const text = formatPerfReport(report());
    expect(text).toContain("Concurrency: 4, throughput: 4.0 infer/sec, latency 3500 usec");
    expect(text).toContain("Request concurrency: 4");
    expect(text).toContain(
      "Avg queue 100 usec + compute input 0 usec + compute infer 700 usec + compute output 0 usec",
    );
    expect(text).toContain("Executions by batch size: 2: 6");
    const [head, rule, row] = summaryTable(report());
    expect(head).toMatch(/^Concurrency {2}Infer\/sec {2}p50 usec/);
    expect(rule!.split("  ").map((dashes) => dashes.length)).toEqual(
      head!.split(/ {2}(?=\S)/).map((title) => title.length),
    );
    expect(row).toMatch(/^4 +4\.0 +3000 +6000 +6000 +6000 +3500 +100 +0 +700 +0 +6 +0 +yes$/);
    // Every column's right edge lines up between the header and the row.
    expect(row!.length).toBe(head!.length);
  });

  it("warns about unstable steps and errors", () => {
    const unstable = report();
    unstable.steps[0] = { ...unstable.steps[0]!, stable: false, errors: 2 };
    const text = formatPerfReport(unstable);
    expect(text).toContain("Warning: concurrency 4 did not stabilize within 10% (4 of at most 10 windows measured)");
    expect(text).toContain("Errors at concurrency 4: 2 failed requests; e.g. HTTP 500: boom");
  });
});

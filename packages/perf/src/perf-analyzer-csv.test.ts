import { describe, expect, it } from "vitest";
import { cppDouble, formatPerfAnalyzerCsv } from "./perf-analyzer-csv.js";
import type { PerfReport, PerfStep } from "./perf-report.js";

const latency = (p50: number, avg: number) => ({
  p50,
  p90: p50 + 10,
  p95: p50 + 20,
  p99: p50 + 30,
  avg,
  min: 1,
  max: 999,
});

function step(concurrency: number, throughput: number, extra: Partial<PerfStep> = {}): PerfStep {
  return {
    concurrency,
    throughputInferPerSec: throughput,
    throughputRequestsPerSec: throughput,
    latencyUs: latency(100.7 * concurrency, 120.9 * concurrency),
    requests: 10,
    errors: 0,
    errorSamples: [],
    stable: true,
    windows: [],
    ...extra,
  } as PerfStep;
}

function report(steps: PerfStep[], config: Partial<PerfReport["config"]> = {}): PerfReport {
  return {
    schemaVersion: 1,
    model: "m",
    version: "1",
    protocol: "http",
    mode: "concurrency",
    startedAt: "",
    finishedAt: "",
    config: {
      url: "",
      batchSize: 1,
      maxBatchSize: 0,
      inputData: "zero",
      shapes: {},
      binaryData: true,
      measurementIntervalMs: 1,
      stabilityPercentage: 10,
      maxTrials: 1,
      inputs: [],
      ...config,
    },
    steps,
  };
}

const server = {
  requests: 10,
  queueUs: 10.9,
  computeInputUs: 5,
  computeInferUs: 50.5,
  computeOutputUs: 4,
  batchSizes: {},
};

describe("formatPerfAnalyzerCsv", () => {
  it("writes perf_analyzer's columns, server ones included, rows by increasing throughput", () => {
    const csv = formatPerfAnalyzerCsv(report([step(2, 2500.123456, { server }), step(1, 1234.5, { server })]));
    expect(csv).toBe(
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency\n" +
        "1,1234.5,0,50,10,5,50,4,0,100,110,120,130\n" +
        "2,2500.12,0,171,10,5,50,4,0,201,211,221,231\n",
    );
  });

  it("drops the server columns when a step has no server statistics, and names the rate in request-rate mode", () => {
    const rate = { ...step(1, 10), concurrency: undefined, requestRate: 100 } as unknown as PerfStep;
    const csv = formatPerfAnalyzerCsv({ ...report([rate]), mode: "request-rate" });
    expect(csv.split("\n")[0]).toBe(
      "Request Rate,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency",
    );
    expect(csv.split("\n")[1]).toBe("100,10,0,0,100,110,120,130");
  });

  it("adds a --percentile column in numeric order, and the verbose columns", () => {
    const csv = formatPerfAnalyzerCsv(report([step(1, 10, { percentileLatencyUs: 107.9 })], { percentile: 75 }), {
      verbose: true,
    });
    expect(csv.split("\n")[0]).toBe(
      "Concurrency,Inferences/Second,Client Send,Client Recv,p50 latency,p75 latency,p90 latency,p95 latency,p99 latency,request/response,response wait",
    );
    expect(csv.split("\n")[1]).toBe("1,10,0,0,100,107,110,120,130,0,120");
    const plain = formatPerfAnalyzerCsv(report([step(1, 10)]), { verbose: true });
    expect(plain.split("\n")[0]).toMatch(/p99 latency,Avg latency,request\/response,response wait$/);
  });
});

describe("cppDouble (std::ostream's default for a double)", () => {
  it.each([
    [0, "0"],
    [6.219687, "6.21969"],
    [1234.5, "1234.5"],
    [100, "100"],
    [999999.5, "1e+06"],
    [1234567, "1.23457e+06"],
    [0.000123456789, "0.000123457"],
    [0.00001, "1e-05"],
    [2500.123456, "2500.12"],
  ])("%d prints as %s", (value, text) => {
    expect(cppDouble(value)).toBe(text);
  });
});

import { describe, expect, it } from "vitest";
import { cppDouble, formatPerfAnalyzerCsv, parsePerfAnalyzerCsv } from "./perf-analyzer-csv.js";
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

  it("adds perf_analyzer's Server Cache Hit / Miss columns when the model's response cache is on", () => {
    const cached = { ...server, cacheHits: 6, cacheHitUs: 3.9, cacheMisses: 4, cacheMissUs: 12.2 };
    const csv = formatPerfAnalyzerCsv(report([step(1, 1234.5, { server: cached })], { responseCache: true }));
    expect(csv).toBe(
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Server Cache Hit,Server Cache Miss,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency\n" +
        // Network+Server = 120.9 - (10.9 + 5 + 50.5 + 4 + 3.9 + 12.2): the cache times count as the server's.
        "1,1234.5,0,34,10,5,50,4,3,12,0,100,110,120,130\n",
    );
    // Read back, the average latency is the sum of its parts, cache times included.
    expect(parsePerfAnalyzerCsv(csv)[0]!.avgLatencyUs).toBe(34 + 10 + 5 + 50 + 4 + 3 + 12);
    // Without the response cache (perf_analyzer keeps the columns out for older readers), and a cache on with no
    // hit or miss counted yet writes 0s.
    expect(formatPerfAnalyzerCsv(report([step(1, 1, { server: cached })])).split("\n")[0]).not.toContain("Cache");
    expect(formatPerfAnalyzerCsv(report([step(1, 1, { server })], { responseCache: true })).split("\n")[1]).toBe(
      "1,1,0,50,10,5,50,4,0,0,0,100,110,120,130",
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

describe("parsePerfAnalyzerCsv", () => {
  // As perf_analyzer 2.x writes it with server statistics (times in µs).
  const TRITON_CSV = [
    "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency",
    "2,1710.37,21,359,36,14,708,12,3,1127,1408,1514,1729",
    "1,1021.21,19,301,23,12,597,10,2,944,1146,1231,1459",
    "",
  ].join("\r\n");

  it("reads perf_analyzer's CSV by column name, rows by concurrency, the average as the sum of the parts", () => {
    expect(parsePerfAnalyzerCsv(TRITON_CSV)).toEqual([
      {
        concurrency: 1,
        throughputInferPerSec: 1021.21,
        latencyUs: { p50: 944, p90: 1146, p95: 1231, p99: 1459 },
        avgLatencyUs: 19 + 301 + 23 + 12 + 597 + 10 + 2,
        server: { queueUs: 23, computeInputUs: 12, computeInferUs: 597, computeOutputUs: 10 },
      },
      {
        concurrency: 2,
        throughputInferPerSec: 1710.37,
        latencyUs: { p50: 1127, p90: 1408, p95: 1514, p99: 1729 },
        avgLatencyUs: 21 + 359 + 36 + 14 + 708 + 12 + 3,
        server: { queueUs: 36, computeInputUs: 14, computeInferUs: 708, computeOutputUs: 12 },
      },
    ]);
  });

  it("reads back what `operon perf -f` writes, without server columns too", () => {
    const csv = formatPerfAnalyzerCsv(report([step(1, 500), step(4, 1500)]));
    const rows = parsePerfAnalyzerCsv(csv);
    expect(rows.map((row) => [row.concurrency, row.throughputInferPerSec, row.latencyUs.p99, row.server])).toEqual([
      [1, 500, 130, undefined],
      [4, 1500, 432, undefined],
    ]);
  });

  it.each([
    ["", /empty/],
    [
      "Request Rate,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency\n",
      /request-rate/,
    ],
    ["Concurrency,Inferences/Second\n1,2\n", /line 1: .*missing 'p50 latency'/],
    ["Concurrency,Inferences/Second,p50 latency,p90 latency,p95 latency,p99 latency\n", /no rows/],
    [
      "Concurrency,Inferences/Second,p50 latency,p90 latency,p95 latency,p99 latency\n1,2,3\n",
      /line 2: 3 values for 6 columns/,
    ],
    [
      "Concurrency,Inferences/Second,p50 latency,p90 latency,p95 latency,p99 latency\n1,fast,3,4,5,6\n",
      /line 2, column 'Inferences\/Second': 'fast' is not a number/,
    ],
    [
      "Concurrency,Inferences/Second,p50 latency,p90 latency,p95 latency,p99 latency\n0.5,2,3,4,5,6\n",
      /'Concurrency': '0.5' is not a whole number/,
    ],
    [
      "Concurrency,Inferences/Second,p50 latency,p90 latency,p95 latency,p99 latency\n1,2,3,4,5,6\n1,2,3,4,5,6\n",
      /concurrency 1 appears twice/,
    ],
  ])("refuses %j naming the problem", (csv, message) => {
    expect(() => parsePerfAnalyzerCsv(csv)).toThrow(message);
  });
});

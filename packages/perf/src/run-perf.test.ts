import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeKserveServer, startFakeKserveServer } from "../test/fake-kserve-server.js";
import type { PerfProgress } from "./perf-progress.js";
import { parsePerfReport } from "./perf-report.js";
import { resolvePerfOptions, runPerf } from "./run-perf.js";

describe("resolvePerfOptions", () => {
  it("applies perf_analyzer's defaults", () => {
    expect(resolvePerfOptions({ model: "m" })).toMatchObject({
      protocol: "http",
      url: "localhost:8000",
      mode: "concurrency",
      range: { start: 1, end: 1, step: 1 },
      measurementIntervalMs: 5000,
      stabilityPercentage: 10,
      maxTrials: 10,
      batchSize: 1,
      inputData: "random",
      binaryData: true,
      requestCount: undefined,
    });
    expect(resolvePerfOptions({ model: "m", protocol: "grpc" }).url).toBe("localhost:8001");
    expect(resolvePerfOptions({ model: "m", requestRateRange: { start: 10, end: 30, step: 10 } }).mode).toBe(
      "request-rate",
    );
  });

  it.each([
    [{ model: "" }, /model name is required/],
    [
      { model: "m", concurrencyRange: { start: 1, end: 2, step: 1 }, requestRateRange: { start: 1, end: 1, step: 1 } },
      /cannot be used together/,
    ],
    [{ model: "m", concurrencyRange: { start: 1.5, end: 2, step: 1 } }, /whole numbers/],
    [{ model: "m", measurementIntervalMs: 0 }, /--measurement-interval must be a whole number >= 1/],
    [{ model: "m", maxTrials: 0 }, /--max-trials/],
    [{ model: "m", requestCount: -3 }, /--request-count/],
    [{ model: "m", stabilityPercentage: 0 }, /--stability-percentage/],
    [{ model: "m", url: "https://x:1" }, /no TLS/],
  ])("refuses %j", (options, message) => {
    expect(() => resolvePerfOptions(options)).toThrow(message);
  });
});

describe("runPerf against a fake KServe server", () => {
  let server: FakeKserveServer;
  afterEach(async () => {
    await server?.close();
  });

  it("sweeps the range and returns a valid report with client and server figures", async () => {
    server = await startFakeKserveServer({ inferDelayMs: 1 });
    const progress: PerfProgress[] = [];
    const report = await runPerf(
      {
        model: "toy",
        url: server.url,
        concurrencyRange: { start: 1, end: 3, step: 2 },
        measurementIntervalMs: 50,
        maxTrials: 3,
        batchSize: 2,
      },
      { onProgress: (p) => progress.push(p) },
    );
    expect(parsePerfReport(JSON.parse(JSON.stringify(report)))).toEqual(report);
    expect(report).toMatchObject({ model: "toy", version: "2", protocol: "http", mode: "concurrency" });
    expect(report.config).toMatchObject({
      batchSize: 2,
      maxBatchSize: 8,
      inputs: [{ name: "X", datatype: "FP32", shape: [2, 4] }],
    });
    expect(report.steps.map((step) => step.concurrency)).toEqual([1, 3]);
    for (const step of report.steps) {
      expect(step.requests).toBeGreaterThan(0);
      expect(step.errors).toBe(0);
      expect(step.throughputInferPerSec).toBeCloseTo(step.throughputRequestsPerSec * 2, 1);
      expect(step.server).toMatchObject({ queueUs: 1, computeInputUs: 2, computeInferUs: 3, computeOutputUs: 4 });
      expect(step.windows.length).toBeLessThanOrEqual(3);
    }
    expect(progress.filter((p) => p.phase === "step").map((p) => [p.stepIndex, p.stepCount])).toEqual([
      [0, 2],
      [1, 2],
    ]);
    expect(progress.some((p) => p.phase === "window" && p.window === 1)).toBe(true);
    // The warm-up request precedes the measurement; all requests used the prepared binary body.
    const infers = server.received.filter((r) => r.path.endsWith("/infer"));
    expect(infers.every((r) => r.headers["inference-header-content-length"] !== undefined)).toBe(true);
  });

  it("reads --input-data files and runs request-count steps", async () => {
    server = await startFakeKserveServer();
    const file = join(mkdtempSync(join(tmpdir(), "operon-perf-")), "data.json");
    writeFileSync(file, JSON.stringify({ data: [{ X: [1, 2, 3, 4] }] }));
    const report = await runPerf({
      model: "toy",
      url: server.url,
      inputData: file,
      requestCount: 12,
      binaryData: false,
    });
    expect(report.config).toMatchObject({ inputData: "file", inputDataFile: file, requestCount: 12 });
    expect(report.steps[0]).toMatchObject({ concurrency: 1, requests: 12, stable: true });
    const last = server.received.filter((r) => r.path.endsWith("/infer")).at(-1)!;
    expect(JSON.parse(last.body.toString())).toEqual({
      inputs: [{ name: "X", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }],
      parameters: { operon_traffic: "perf" },
    });
  });

  it("fails fast with PerfError codes: unknown model, rejected first request, bad input file", async () => {
    server = await startFakeKserveServer();
    await expect(runPerf({ model: "nope", url: server.url })).rejects.toMatchObject({ code: "MODEL_NOT_FOUND" });
    await expect(runPerf({ model: "toy", url: server.url, inputData: "/does/not/exist.json" })).rejects.toMatchObject({
      code: "BAD_OPTIONS",
    });
    server.failInfer(400, "input 'X' is wrong");
    await expect(runPerf({ model: "toy", url: server.url, measurementIntervalMs: 50 })).rejects.toMatchObject({
      code: "SERVER_ERROR",
      message: "the first inference request to model 'toy' failed: HTTP 400: input 'X' is wrong",
    });
  });

  it("stops on abort and reports the steps completed", async () => {
    server = await startFakeKserveServer({ inferDelayMs: 1 });
    const controller = new AbortController();
    const report = await runPerf(
      {
        model: "toy",
        url: server.url,
        concurrencyRange: { start: 1, end: 5, step: 1 },
        measurementIntervalMs: 40,
        maxTrials: 2,
        signal: controller.signal,
      },
      { onProgress: (p) => p.phase === "step" && p.stepIndex === 1 && controller.abort() },
    );
    expect(report.steps.map((step) => step.concurrency)).toEqual([1]);
  });
});

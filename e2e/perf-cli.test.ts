import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:net";
import { join } from "node:path";
import { parsePerfReport, type PerfReport } from "@operon/perf/perf-report";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  EXAMPLE_REPOSITORY,
  runOperon,
  startOperon,
  tempRepository,
  type RunningOperon,
} from "./support/operon-process.js";

/**
 * `operon perf` (the built CLI, as a user runs it) against the real
 * `operon serve` on the example repository, over HTTP and gRPC. Windows
 * are short (300 ms, at most 3 per step) to keep the file fast; the
 * figures are checked for shape and sanity, not for speed.
 */

const SHORT = ["--measurement-interval", "300", "--max-trials", "3"];

function parseReport(stdout: string): PerfReport {
  return parsePerfReport(JSON.parse(stdout));
}

function expectSaneSteps(report: PerfReport): void {
  for (const step of report.steps) {
    expect(step.requests).toBeGreaterThan(0);
    expect(step.errors).toBe(0);
    expect(step.errorSamples).toEqual([]);
    expect(step.throughputInferPerSec).toBeGreaterThan(0);
    const l = step.latencyUs;
    expect(l.min).toBeGreaterThan(0);
    expect(l.min).toBeLessThanOrEqual(l.p50);
    expect(l.p50).toBeLessThanOrEqual(l.p90);
    expect(l.p90).toBeLessThanOrEqual(l.p95);
    expect(l.p95).toBeLessThanOrEqual(l.p99);
    expect(l.p99).toBeLessThanOrEqual(l.max);
    expect(step.server).toBeDefined();
    expect(step.server!.requests).toBeGreaterThan(0);
    expect(step.server!.computeInferUs).toBeGreaterThan(0);
    expect(step.server!.batchSizes).not.toEqual({});
  }
}

/** A port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("operon perf", () => {
  let server: RunningOperon;
  let httpAddress: string;
  beforeAll(async () => {
    server = await startOperon(["--model-repository", EXAMPLE_REPOSITORY]);
    httpAddress = server.httpUrl.replace(/^http:\/\//, "");
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("sweeps concurrency 1:2 over HTTP and prints only the PerfReport JSON", async () => {
    const run = await runOperon([
      "perf",
      "-m",
      "add_sub",
      "-u",
      httpAddress,
      "--concurrency-range",
      "1:2",
      ...SHORT,
      "--json",
    ]);
    expect(run.stderr).not.toMatch(/error/i);
    expect(run.code).toBe(0);
    const report = parseReport(run.stdout);
    expect(report).toMatchObject({
      schemaVersion: 1,
      model: "add_sub",
      version: "1",
      protocol: "http",
      mode: "concurrency",
    });
    expect(report.config).toMatchObject({
      binaryData: true,
      maxBatchSize: 8,
      inputs: [
        { name: "INPUT0", shape: [1, 16] },
        { name: "INPUT1", shape: [1, 16] },
      ],
    });
    expect(report.steps.map((step) => step.concurrency)).toEqual([1, 2]);
    expectSaneSteps(report);
    // Progress went to stderr, one line per window (stderr is not a terminal here).
    expect(run.stderr).toMatch(/\[1\/2\] concurrency 1: window 1\/3/);
  });

  it("sweeps concurrency 1:2 over gRPC", async () => {
    const run = await runOperon([
      "perf",
      "-m",
      "add_sub",
      "-i",
      "grpc",
      "-u",
      server.grpcAddress,
      "--concurrency-range",
      "1:2",
      ...SHORT,
      "--json",
    ]);
    expect(run.code).toBe(0);
    const report = parseReport(run.stdout);
    expect(report).toMatchObject({ protocol: "grpc", mode: "concurrency", config: { url: server.grpcAddress } });
    expect(report.steps.map((step) => step.concurrency)).toEqual([1, 2]);
    expectSaneSteps(report);
  });

  it("sends exactly --request-count requests, prints the table, writes perf_analyzer's CSV to -f and the JSON to --profile-export-file", async () => {
    const folder = tempRepository("operon-perf-report-");
    const file = join(folder, "report.json");
    const csvFile = join(folder, "report.csv");
    const run = await runOperon([
      "perf",
      "-m",
      "add_sub",
      "-u",
      httpAddress,
      "--request-count",
      "40",
      "--concurrency-range",
      "2",
      "-b",
      "4",
      "--percentile",
      "75",
      "-H",
      "X-Operon-Test: perf",
      "-f",
      csvFile,
      "--profile-export-file",
      file,
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Concurrency: 2, throughput: [0-9.]+ infer\/sec, latency [0-9]+ usec$/m);
    expect(run.stdout).toMatch(/^Concurrency {2}Infer\/sec {2}p50 usec/m);
    const report = parsePerfReport(JSON.parse(readFileSync(file, "utf8")));
    expect(report.config).toMatchObject({
      requestCount: 40,
      batchSize: 4,
      percentile: 75,
      inputs: [{ shape: [4, 16] }, { shape: [4, 16] }],
    });
    expect(report.steps).toHaveLength(1);
    expect(report.steps[0]).toMatchObject({ concurrency: 2, requests: 40, errors: 0, stable: true });
    expect(report.steps[0]!.throughputInferPerSec).toBeCloseTo(report.steps[0]!.throughputRequestsPerSec * 4, 0);
    expectSaneSteps(report);
    const step = report.steps[0]!;
    expect(step.percentileLatencyUs).toBeGreaterThanOrEqual(step.latencyUs.p50);
    expect(step.percentileLatencyUs).toBeLessThanOrEqual(step.latencyUs.p90);
    // perf_analyzer's CSV: its header, then one row per step with whole microseconds.
    const [header, row, end] = readFileSync(csvFile, "utf8").split("\n");
    expect(header).toBe(
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p75 latency,p90 latency,p95 latency,p99 latency",
    );
    expect(end).toBe("");
    const cells = row!.split(",");
    expect(cells).toHaveLength(14);
    expect(cells[0]).toBe("2");
    expect(Number(cells[1])).toBeCloseTo(step.throughputInferPerSec, -1);
    expect(Number(cells[9])).toBe(Math.trunc(step.latencyUs.p50));
    expect(Number(cells[10])).toBe(Math.trunc(step.percentileLatencyUs!));
    expect(Number(cells[6])).toBe(Math.trunc(step.server!.computeInferUs));
  });

  it("--shared-memory system sends every tensor through registered regions, over HTTP and gRPC, and leaves none behind", async () => {
    for (const [protocol, address] of [
      ["http", httpAddress],
      ["grpc", server.grpcAddress],
    ] as const) {
      const run = await runOperon([
        "perf",
        "-m",
        "add_sub",
        "-i",
        protocol,
        "-u",
        address,
        "--shared-memory",
        "system",
        "--request-count",
        "30",
        "--json",
      ]);
      expect(run.code, run.stderr).toBe(0);
      const report = parseReport(run.stdout);
      expect(report.config).toMatchObject({ sharedMemory: "system", outputSharedMemorySize: 102400 });
      expect(report.steps[0]).toMatchObject({ requests: 30, errors: 0 });
      expectSaneSteps(report);
    }
    const status = await fetch(`http://${httpAddress}/v2/systemsharedmemory/status`);
    expect(await status.json()).toEqual([]);
    expect(readdirSync("/dev/shm").filter((name) => name.startsWith("operon_perf_"))).toEqual([]);
  });

  it("measures a stateful model (silero_vad, sequence_batching) by sending sequences, over HTTP and gRPC", async () => {
    // Silero VAD takes 512-sample chunks at 16 kHz; its recurrent state stays in the server between a sequence's requests.
    const dataFile = join(mkdtempSync(join(tmpdir(), "operon-perf-vad-")), "chunks.json");
    writeFileSync(
      dataFile,
      JSON.stringify({
        data: [
          {
            input: { content: Array.from({ length: 512 }, (_, i) => Math.sin(i / 8) * 0.1), shape: [1, 512] },
            sr: { content: [16000], shape: [] },
          },
        ],
      }),
    );
    for (const [protocol, address] of [
      ["http", httpAddress],
      ["grpc", server.grpcAddress],
    ] as const) {
      const run = await runOperon([
        "perf",
        "-m",
        "silero_vad",
        "-i",
        protocol,
        "-u",
        address,
        "--input-data",
        dataFile,
        "--sequence-length",
        "4",
        "--sequence-id-range",
        "1000:1999",
        "--concurrency-range",
        "2",
        "--request-count",
        "24",
        "--json",
      ]);
      expect(run.code, run.stderr).toBe(0);
      const report = parseReport(run.stdout);
      expect(report.config).toMatchObject({ sequenceLength: 4, sequenceIdStart: "1000" });
      expect(report.steps[0]).toMatchObject({ requests: 24, errors: 0 });
    }
  });

  it("a decoupled model (text_generator) is refused without --streaming and measured with it over one gRPC stream", async () => {
    const refused = await runOperon(["perf", "-m", "text_generator", "-i", "grpc", "-u", server.grpcAddress]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/is decoupled: .*--streaming -i grpc/);
    const overHttp = await runOperon(["perf", "-m", "text_generator", "-u", httpAddress, "--streaming"]);
    expect(overHttp.code).toBe(2);
    expect(overHttp.stderr).toMatch(/--streaming needs the gRPC protocol/);
    const run = await runOperon([
      "perf",
      "-m",
      "text_generator",
      "-i",
      "grpc",
      "-u",
      server.grpcAddress,
      "--streaming",
      "--concurrency-range",
      "2",
      "--request-count",
      "12",
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const report = parseReport(run.stdout);
    expect(report.config).toMatchObject({ streaming: true });
    expect(report.steps[0]).toMatchObject({ requests: 12, errors: 0 });
    expect(report.steps[0]!.latencyUs.min).toBeGreaterThan(0);
  });

  it("refuses a malformed -H and an out-of-range --percentile as usage errors", async () => {
    const [header, percentile] = await Promise.all([
      runOperon(["perf", "-m", "add_sub", "-u", httpAddress, "-H", "no colon here"]),
      runOperon(["perf", "-m", "add_sub", "-u", httpAddress, "--percentile", "100"]),
    ]);
    expect(header.code).toBe(2);
    expect(header.stderr).toMatch(/expected 'Name: value'/);
    expect(percentile.code).toBe(2);
    expect(percentile.stderr).toMatch(/not a whole number from 1 to 99/);
  });

  it("runs open-loop request-rate steps with Poisson arrivals", async () => {
    const run = await runOperon([
      "perf",
      "-m",
      "add_sub",
      "-u",
      httpAddress,
      "--request-rate-range",
      "40:80:40",
      "--request-distribution",
      "poisson",
      ...SHORT,
      "--json",
    ]);
    expect(run.code).toBe(0);
    const report = parseReport(run.stdout);
    expect(report).toMatchObject({
      mode: "request-rate",
      config: { requestDistribution: "poisson", requestRateRange: { start: 40, end: 80, step: 40 } },
    });
    expect(report.steps.map((step) => step.requestRate)).toEqual([40, 80]);
    expectSaneSteps(report);
    for (const step of report.steps) expect(step.throughputRequestsPerSec).toBeLessThan(step.requestRate! * 2);
  });

  it("exits 1 naming an unknown model", async () => {
    const run = await runOperon(["perf", "-m", "no_such_model", "-u", httpAddress]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr.trim()).toMatch(
      /^error: model 'no_such_model' is not available at http:\/\/127\.0\.0\.1:\d+: .*no_such_model/,
    );
    const grpcRun = await runOperon(["perf", "-m", "no_such_model", "-i", "grpc", "-u", server.grpcAddress]);
    expect(grpcRun.code).toBe(1);
    expect(grpcRun.stderr).toContain("model 'no_such_model'");
  });

  it("exits 1 saying it cannot connect to a closed port, over HTTP and gRPC", async () => {
    const port = await closedPort();
    const run = await runOperon(["perf", "-m", "add_sub", "-u", `127.0.0.1:${port}`]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(
      new RegExp(`^error: cannot connect to the server at http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`),
    );
    const grpcRun = await runOperon(["perf", "-m", "add_sub", "-i", "grpc", "-u", `127.0.0.1:${port}`]);
    expect(grpcRun.code).toBe(1);
    expect(grpcRun.stderr).toContain(`cannot connect to the gRPC server at 127.0.0.1:${port}`);
  });

  it("exits 2 with one line on bad flags", async () => {
    const badFlags = [
      ["--concurrency-range", "4:1"],
      ["--concurrency-range", "1:2", "--request-rate-range", "10"],
      ["--batch-size", "0"],
      ["--bogus"],
    ];
    // The runs are independent processes: started together, the test waits for the slowest start-up of the CLI
    // (1 to 4 s each on the loaded 2-core host), not for the sum of five.
    const [tooBig, ...runs] = await Promise.all([
      runOperon(["perf", "-m", "add_sub", "-u", httpAddress, "-b", "9"]),
      ...badFlags.map((args) => runOperon(["perf", "-m", "add_sub", "-u", httpAddress, ...args])),
    ]);
    for (const [i, run] of runs.entries()) {
      const args = badFlags[i]!;
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
      expect(run.stderr).toMatch(/^error: /);
    }
    expect(tooBig!.code).toBe(2);
    expect(tooBig.stderr).toContain("--batch-size 9 exceeds the model's max_batch_size 8");
  });
});

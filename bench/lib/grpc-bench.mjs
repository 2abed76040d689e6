// gRPC load for the request-path tools: a ModelInfer message written to a
// file once, and grpc-load.mjs (a process of its own) run against an address.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import * as protoLoader from "@grpc/proto-loader";
import { PROTO_DIR } from "@operon/protocol/proto-dir";
import { join } from "node:path";
import { ROOT } from "./processes.mjs";

/** KServe's grpc_service.proto as proto-loader reads it for the bench clients (keepCase, 64-bit integers as strings). */
export const definition = await protoLoader.load(["grpc_service.proto"], {
  keepCase: true,
  longs: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
});
const serializeModelInfer = definition["inference.GRPCInferenceService"].ModelInfer.requestSerialize;

/** add_sub's two FP32 [1,16] inputs as raw_input_contents, as section 1 of run-bench.mjs sends them. */
export const ADD_SUB_INPUTS = ["INPUT0", "INPUT1"].map((name, n) => ({
  name,
  shape: [1, 16],
  data: Array.from({ length: 16 }, (_, i) => n + 1 + (i % 7) / 8),
}));

/** Writes a serialized ModelInferRequest for `model` (FP32 inputs in raw_input_contents) to `file`; returns the file. */
export function writeGrpcMessageFile(file, model, inputs = ADD_SUB_INPUTS) {
  writeFileSync(
    file,
    serializeModelInfer({
      model_name: model,
      inputs: inputs.map(({ name, shape }) => ({ name, datatype: "FP32", shape })),
      raw_input_contents: inputs.map(({ data }) => Buffer.from(new Float32Array(data).buffer)),
    }),
  );
  return file;
}

/** grpc-load.mjs's result: { requests, seconds, p50Us, p99Us, errors, firstError } plus requestsPerSec. */
export function runGrpcLoad(address, file, concurrency, seconds) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(ROOT, "bench/lib/grpc-load.mjs"), address, file, String(concurrency), String(seconds)],
      { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`grpc-load exited ${code}`));
      const raw = JSON.parse(out.trim().split("\n").pop());
      resolve({ ...raw, requestsPerSec: raw.requests / raw.seconds });
    });
  });
}

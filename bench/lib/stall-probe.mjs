// Bench section 5's stall probes, shared by run-bench.mjs (the committed
// figures) and stall-ab.mjs (two checkouts side by side): while an attacker
// process sends the largest body the limits allow, again and again, probe
// GET /v2/health/ready and a tiny add_sub inference every 20 ms, and sample
// the gateway's RSS.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as protoLoader from "@grpc/proto-loader";
import { PROTO_DIR } from "@operon/protocol/proto-dir";
import { addSubRequest } from "./add-sub-load.mjs";

/** The gateway's default body limit: each attack body is as large as it allows. */
const LIMIT = 64 * 1024 * 1024;

export const STALL_ATTACKS = [
  { kind: "json", name: "HTTP JSON, 64 MiB of numbers" },
  { kind: "binary", name: "HTTP binary, 64 MiB" },
  { kind: "grpc", name: "gRPC ModelInfer, 64 MiB" },
];

/**
 * Writes the three attack bodies into `dir`: JSON numbers up to the limit (a
 * valid request of the wrong size: decoded in full, then refused), a binary
 * body declaring 64 MiB of data, and a gRPC ModelInfer with 64 MiB of raw input.
 */
export function writeStallAttackFiles(dir) {
  const json = join(dir, "largest.json");
  const head = '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,16],"data":[';
  writeFileSync(json, `${head}${"0.5,".repeat(Math.floor((LIMIT - head.length - 16) / 4) - 1)}0.5]}]}`);
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: LIMIT - 4096 } }],
    }),
  );
  const binary = join(dir, "largest.bin");
  writeFileSync(binary, Buffer.concat([header, Buffer.alloc(LIMIT - 4096)]));
  const definition = protoLoader.loadSync(["grpc_service.proto"], {
    keepCase: true,
    longs: String,
    defaults: true,
    oneofs: true,
    includeDirs: [PROTO_DIR],
  });
  const grpc = join(dir, "largest-grpc.bin");
  writeFileSync(
    grpc,
    definition["inference.GRPCInferenceService"].ModelInfer.requestSerialize({
      model_name: "add_sub",
      inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 16] }],
      raw_input_contents: [Buffer.alloc(LIMIT - 1024)],
    }),
  );
  return { json, binary, binaryHeaderLength: header.length, grpc };
}

/** Starts the attacker process of `kind` against the gateway (its own process group, for stopStallAttack). */
export function startStallAttack(operon, kind, files) {
  if (kind === "grpc") {
    // The gRPC load client, 8 messages in flight: the client is not what is measured.
    return spawn(
      process.execPath,
      [join(import.meta.dirname, "grpc-load.mjs"), operon.grpcAddress, files.grpc, "1", "8"],
      {
        stdio: "ignore",
        detached: true,
      },
    );
  }
  const headers =
    kind === "binary"
      ? ["content-type: application/octet-stream", `inference-header-content-length: ${files.binaryHeaderLength}`]
      : ["content-type: application/json"];
  const file = kind === "binary" ? files.binary : files.json;
  const quoted = headers.map((header) => `-H '${header}'`).join(" ");
  const script = `while true; do curl -s -o /dev/null -X POST ${quoted} --data-binary @'${file}' '${operon.httpUrl}/v2/models/add_sub/infer'; done`;
  return spawn("bash", ["-c", script], { stdio: "ignore", detached: true });
}

/** Kills the attacker and what it started (curl under the bash loop). */
export function stopStallAttack(attacker) {
  try {
    process.kill(-attacker.pid, "SIGKILL");
  } catch {
    attacker.kill("SIGKILL");
  }
}

/**
 * Runs one attack for `seconds` while probing; resolves with each probe's
 * p50, p99 and max (ms), the number of probes and the gateway's RSS peak.
 * A probe that is not answered 200 fails the measurement.
 */
export async function probeDuringAttack(operon, kind, files, seconds = 6) {
  const tiny = addSubRequest("json");
  const attacker = startStallAttack(operon, kind, files);
  try {
    await sleep(500);
    const health = [];
    const infer = [];
    let rssPeak = 0;
    const end = Date.now() + seconds * 1000;
    while (Date.now() < end) {
      rssPeak = Math.max(rssPeak, rssOf(operon.pid));
      let started = process.hrtime.bigint();
      const ready = await fetch(`${operon.httpUrl}/v2/health/ready`);
      health.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (ready.status !== 200) throw new Error(`not ready during the ${kind} attack: ${ready.status}`);
      await ready.arrayBuffer();
      started = process.hrtime.bigint();
      const answer = await fetch(`${operon.httpUrl}/v2/models/add_sub/infer`, {
        method: "POST",
        body: tiny.body,
        headers: tiny.headers,
      });
      infer.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (answer.status !== 200) throw new Error(`tiny inference failed during the ${kind} attack: ${answer.status}`);
      await answer.arrayBuffer();
      await sleep(20);
    }
    const at = (list, q) => [...list].sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor(q * list.length))];
    return {
      probes: health.length,
      healthP50Ms: at(health, 0.5),
      healthP99Ms: at(health, 0.99),
      healthMaxMs: Math.max(...health),
      inferP50Ms: at(infer, 0.5),
      inferP99Ms: at(infer, 0.99),
      inferMaxMs: Math.max(...infer),
      gatewayRssPeakMiB: rssPeak / 2 ** 20,
    };
  } finally {
    stopStallAttack(attacker);
    await sleep(1000);
  }
}

function rssOf(pid) {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function sleep(ms) {
  return new Promise((done) => setTimeout(done, ms));
}

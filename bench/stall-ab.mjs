#!/usr/bin/env node
// Bench section 5's stall probes, A/B: the same probes (GET /v2/health/ready,
// then a tiny add_sub inference, then 20 ms of sleep, for a few seconds) while
// one process sends the largest HTTP body again and again, against two or more
// built checkouts in interleaved rounds (the order flips every round), so that
// load from elsewhere on the host falls on each alike.
// Usage: node bench/stall-ab.mjs <rounds> <json|binary|grpc>[,…] <checkout root>…
// Prints one line per measurement and, per checkout and attack, the median and
// range over rounds of each p99.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import * as protoLoader from "@grpc/proto-loader";
import { PROTO_DIR } from "@operon/protocol/proto-dir";
import { addSubRequest, writeAddSubRepository } from "./lib/add-sub-load.mjs";

const [roundsText = "3", kindsText = "json,binary", ...rootArgs] = process.argv.slice(2);
if (rootArgs.length === 0) throw new Error("usage: node bench/stall-ab.mjs <rounds> <json|binary|grpc>[,…] <root>…");
const roots = rootArgs.map((root) => resolve(root));
const kinds = kindsText.split(",");
const LIMIT = 64 * 1024 * 1024;
const SECONDS = 6;
const files = mkdtempSync(join(tmpdir(), "operon-stall-ab-"));
const { repository } = writeAddSubRepository({ prefix: "operon-stall-ab-repo-" });
const tiny = addSubRequest("json");
const attackFiles = writeAttackFiles();
const results = new Map();

for (let round = 0; round < Number(roundsText); round += 1) {
  const order = round % 2 === 0 ? roots : [...roots].reverse();
  for (const root of order) {
    const { startOperon } = await import(pathToFileURL(join(root, "bench/lib/processes.mjs")).href);
    const operon = await startOperon(repository, ["--load-model", "*", "--model-control-mode", "explicit"]);
    try {
      for (const kind of kinds) {
        const figures = await probe(operon, kind);
        const key = `${kind} ${root}`;
        results.set(key, [...(results.get(key) ?? []), figures]);
        console.log(
          `round ${round + 1} ${kind.padEnd(6)} ${root}: health p99 ${figures.health.toFixed(1)} ms, tiny inference p99 ${figures.infer.toFixed(1)} ms (max ${figures.inferMax.toFixed(1)}), ${figures.probes} probes, RSS peak ${figures.rssMiB.toFixed(0)} MiB`,
        );
      }
    } finally {
      await operon.stop();
    }
  }
}
console.log("median (min–max) over rounds:");
for (const [key, list] of results) {
  const spread = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    return `${sorted[Math.floor((sorted.length - 1) / 2)].toFixed(1)} (${sorted[0].toFixed(1)}–${sorted.at(-1).toFixed(1)})`;
  };
  console.log(
    `  ${key}: health p99 ${spread(list.map((f) => f.health))} ms, tiny inference p99 ${spread(list.map((f) => f.infer))} ms, RSS peak ${spread(list.map((f) => f.rssMiB))} MiB`,
  );
}
process.exit(0);

async function probe(operon, kind) {
  const attacker = startAttack(operon, kind);
  try {
    await sleep(500);
    const health = [];
    const infer = [];
    let rss = 0;
    const end = Date.now() + SECONDS * 1000;
    while (Date.now() < end) {
      rss = Math.max(rss, rssOf(operon.pid));
      let started = process.hrtime.bigint();
      const ready = await fetch(`${operon.httpUrl}/v2/health/ready`);
      health.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (ready.status !== 200) throw new Error(`not ready during ${kind}: ${ready.status}`);
      started = process.hrtime.bigint();
      const answer = await fetch(`${operon.httpUrl}/v2/models/add_sub/infer`, {
        method: "POST",
        body: tiny.body,
        headers: tiny.headers,
      });
      infer.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (answer.status !== 200) throw new Error(`tiny inference failed during ${kind}: ${answer.status}`);
      await answer.arrayBuffer();
      await sleep(20);
    }
    const p99 = (list) => [...list].sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor(0.99 * list.length))];
    return {
      health: p99(health),
      infer: p99(infer),
      inferMax: Math.max(...infer),
      probes: health.length,
      rssMiB: rss / 2 ** 20,
    };
  } finally {
    try {
      process.kill(-attacker.pid, "SIGKILL");
    } catch {
      attacker.kill("SIGKILL");
    }
    await sleep(1000);
  }
}

function writeAttackFiles() {
  const json = join(files, "largest.json");
  const head = '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,16],"data":[';
  writeFileSync(json, `${head}${"0.5,".repeat(Math.floor((LIMIT - head.length - 16) / 4) - 1)}0.5]}]}`);
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: "INPUT0", datatype: "FP32", shape: [1, 16], parameters: { binary_data_size: LIMIT - 4096 } }],
    }),
  );
  const binary = join(files, "largest.bin");
  writeFileSync(binary, Buffer.concat([header, Buffer.alloc(LIMIT - 4096)]));
  const definition = protoLoader.loadSync(["grpc_service.proto"], {
    keepCase: true,
    longs: String,
    defaults: true,
    oneofs: true,
    includeDirs: [PROTO_DIR],
  });
  const grpc = join(files, "largest-grpc.bin");
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

function startAttack(operon, kind) {
  if (kind === "grpc") {
    // grpc-load.mjs of this checkout: the client is not what is measured.
    return spawn(
      process.execPath,
      [join(import.meta.dirname, "lib/grpc-load.mjs"), operon.grpcAddress, attackFiles.grpc, "1", "8"],
      { stdio: "ignore", detached: true },
    );
  }
  const headers =
    kind === "binary"
      ? ["content-type: application/octet-stream", `inference-header-content-length: ${attackFiles.binaryHeaderLength}`]
      : ["content-type: application/json"];
  const file = kind === "binary" ? attackFiles.binary : attackFiles.json;
  const quoted = headers.map((header) => `-H '${header}'`).join(" ");
  const script = `while true; do curl -s -o /dev/null -X POST ${quoted} --data-binary @'${file}' '${operon.httpUrl}/v2/models/add_sub/infer'; done`;
  return spawn("bash", ["-c", script], { stdio: "ignore", detached: true });
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

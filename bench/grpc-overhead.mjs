#!/usr/bin/env node
// Section 1's gRPC lines alone, quicker than `npm run bench`: Operon's
// ModelInfer against the minimal grpc-js + ORT server on add_sub, at
// concurrency 16 (add_sub: batching, 2 instances) and 1 (add_sub_nodelay),
// in interleaved rounds. With OPERON_BASE_ROOT=<another built checkout>, that
// checkout's operon is measured in the same rounds too (an A/B of a change).
// Prints each round, then medians (ranges) and per-round ratios to minimal,
// and the server's CPU per request (all its threads, from /proc: the figure
// machine noise moves least).
// Usage: node bench/grpc-overhead.mjs [rounds=3] [seconds=3]
import { mkdtempSync } from "node:fs";
import { processCpuUs } from "./lib/process-cpu.mjs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeAddSubGrpcRepository } from "./lib/add-sub-grpc-repository.mjs";
import { runGrpcLoad, writeGrpcMessageFile } from "./lib/grpc-bench.mjs";
import { startBaseline, startOperon } from "./lib/processes.mjs";

const [roundsText = "3", secondsText = "3"] = process.argv.slice(2);
const ROUNDS = Number(roundsText);
const SECONDS = Number(secondsText);
const BASE_ROOT = process.env.OPERON_BASE_ROOT;
const log = (line) => process.stderr.write(`${line}\n`);

const { repository, onnx } = writeAddSubGrpcRepository();
const files = mkdtempSync(join(tmpdir(), "operon-grpc-messages-"));
const message = (model) => writeGrpcMessageFile(join(files, `${model}.bin`), model);
const servers = [];
try {
  const args = ["--resource-scheduler", "false"];
  const operon = await startOperon(repository, args);
  servers.push(operon);
  const base = BASE_ROOT === undefined ? undefined : await startOperon(repository, args, { root: BASE_ROOT });
  if (base !== undefined) servers.push(base);
  const minimal = await startBaseline("minimal-grpc-ort-server.mjs", [onnx, "0"]);
  servers.push(minimal);
  for (const concurrency of [16, 1]) {
    const model = concurrency === 16 ? "add_sub" : "add_sub_nodelay";
    const targets = [
      { name: "operon", address: operon.grpcAddress, pid: operon.pid, file: message(model) },
      ...(base ? [{ name: "base", address: base.grpcAddress, pid: base.pid, file: message(model) }] : []),
      { name: "minimal", address: minimal.address, pid: minimal.pid, file: message("add_sub") },
    ];
    const results = Object.fromEntries(targets.map((t) => [t.name, []]));
    for (let round = 1; round <= ROUNDS; round += 1) {
      // Each round starts one target later: no target always runs first after the previous one's load.
      for (const target of targets.map((_, i) => targets[(i + round - 1) % targets.length])) {
        const cpuBefore = processCpuUs(target.pid);
        const result = await runGrpcLoad(target.address, target.file, concurrency, SECONDS);
        // grpc-load warms up for a second before its measured seconds, at about the same rate.
        result.cpuUsPerRequest =
          (processCpuUs(target.pid) - cpuBefore) / (result.requestsPerSec * (result.seconds + 1));
        if (result.errors > 0) throw new Error(`${target.name}: ${result.errors} errors, first: ${result.firstError}`);
        results[target.name].push(result);
        log(
          `  c${concurrency} round ${round} ${target.name.padEnd(8)} ${result.requestsPerSec.toFixed(0).padStart(6)} req/s  p50 ${Math.round(result.p50Us)} µs  p99 ${Math.round(result.p99Us)} µs  CPU ${result.cpuUsPerRequest.toFixed(0)} µs/req`,
        );
      }
    }
    console.log(`concurrency ${concurrency} (${model}):`);
    for (const { name } of targets) {
      const list = results[name];
      console.log(
        `  ${name.padEnd(8)} req/s ${spread(list.map((r) => r.requestsPerSec))}  p50 µs ${spread(list.map((r) => r.p50Us))}  p99 µs ${spread(list.map((r) => r.p99Us))}  CPU µs/req ${spread(list.map((r) => r.cpuUsPerRequest))}`,
      );
      if (name === "minimal") continue;
      const per = (f) => list.map((r, i) => f(r, results.minimal[i]));
      console.log(
        `           / minimal: req/s ${spread(
          per((a, b) => a.requestsPerSec / b.requestsPerSec),
          2,
        )}  p50 ${spread(
          per((a, b) => a.p50Us / b.p50Us),
          2,
        )}  added p50 µs ${spread(per((a, b) => a.p50Us - b.p50Us))}`,
      );
    }
  }
} finally {
  for (const server of servers) await server.stop();
}

function spread(values, digits = 0) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const f = (v) => v.toFixed(digits);
  return `${f(median)} (${f(sorted[0])}–${f(sorted[sorted.length - 1])})`;
}

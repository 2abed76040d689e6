#!/usr/bin/env node
// Where the gateway's CPU goes per gRPC ModelInfer: runs Operon under
// --cpu-prof with grpc-load.mjs's load on add_sub (concurrency 16: batching,
// 2 instances) or add_sub_nodelay (concurrency 1), then prints the gateway
// thread's self time by function and by package, as shares of the measured
// seconds and as µs per request.
// Usage: node bench/profile-grpc-path.mjs [concurrency=16] [seconds=6] [top=40]
// Environment: PROFILE_DIR (default a temp dir), MINIMAL=1 (profile the minimal grpc-js + ORT server instead).
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeAddSubGrpcRepository } from "./lib/add-sub-grpc-repository.mjs";
import { summariseCpuProfile } from "./lib/cpu-profile-summary.mjs";
import { runGrpcLoad, writeGrpcMessageFile } from "./lib/grpc-bench.mjs";
import { startBaseline, startOperon } from "./lib/processes.mjs";

const [concurrency = "16", seconds = "6", top = "40"] = process.argv.slice(2);
const MINIMAL = process.env.MINIMAL === "1";
const profileDir = process.env.PROFILE_DIR ?? mkdtempSync(join(tmpdir(), "operon-grpc-prof-"));
const model = concurrency === "1" && !MINIMAL ? "add_sub_nodelay" : "add_sub";
const { repository, onnx } = writeAddSubGrpcRepository("operon-grpc-prof-repo-");
const file = writeGrpcMessageFile(join(profileDir, `${model}.bin`), model);

const before = new Set(readdirSync(profileDir));
const nodeArgs = ["--cpu-prof", `--cpu-prof-dir=${profileDir}`];
const server = MINIMAL
  ? await startBaseline("minimal-grpc-ort-server.mjs", [onnx, "0"], { nodeArgs })
  : await startOperon(repository, ["--resource-scheduler", "false"], { nodeArgs });
const address = MINIMAL ? server.address : server.grpcAddress;
let windowUs;
let requests;
try {
  await runGrpcLoad(address, file, Number(concurrency), 1);
  // grpc-load warms up for a second of its own before it measures: the window is the measured seconds.
  const started = process.hrtime.bigint() / 1000n;
  const result = await runGrpcLoad(address, file, Number(concurrency), Number(seconds));
  windowUs = { start: Number(started) + 1_300_000, end: Number(process.hrtime.bigint() / 1000n) - 100_000 };
  requests = Math.round((result.requestsPerSec * (windowUs.end - windowUs.start)) / 1e6);
  console.log(
    `${MINIMAL ? "minimal" : "operon"} ${result.requestsPerSec.toFixed(0)} req/s, p50 ${Math.round(result.p50Us)} µs, errors ${result.errors}`,
  );
} finally {
  await server.stop();
}

// The gateway's thread is the one whose profile holds the gRPC frontend (the control plane writes one of its own).
const mark = MINIMAL ? "minimal-grpc-ort-server" : "frontends/grpc/grpc-frontend";
const profiles = readdirSync(profileDir)
  .filter((name) => name.endsWith(".cpuprofile") && !before.has(name))
  .map((name) => join(profileDir, name))
  .filter((path) => readFileSync(path, "utf8").includes(mark));
if (profiles.length === 0) throw new Error(`no .cpuprofile holding ${mark} written in ${profileDir}`);
summariseCpuProfile(profiles[0], { top: Number(top), windowUs, requests });

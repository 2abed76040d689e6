#!/usr/bin/env node
// Concurrency 1 with the client and the servers placed by hand: Operon (and, with OPERON_BASE_ROOT, another
// built checkout's Operon) against the minimal node:http+ORT server, add_sub FP32 [1,16] without a queue delay,
// each measured in the same rounds under each placement.
//
// Why: at concurrency 1 a request is a ping-pong between wrk and the server's main thread, and on this VM where
// those two run decides the latency more than the server's code does. Measured 2026-12-07 (2 vCPUs, Intel Xeon):
//   - "same": wrk and every thread of the servers on core 0. No thread waits on another core, so the p50 is
//     about the CPU the request path costs on both sides: Operon 82-95 µs, minimal 54-63 µs (1.5x).
//   - "apart": the servers on core 1, wrk on core 0. Every request wakes a halted vCPU twice, and the server's
//     work runs cold (caches and TLB lost while halted): Operon 200-219 µs, minimal 143-152 µs (1.4x), the
//     main thread's CPU per request ~2x the "same" figure on both.
//   - "free": the kernel's choice, what `npm run bench` measures. On this host it matched "apart" within noise,
//     but it can flip between the two within a run, and a round that compares one server in one mode with the
//     other in the other gives a ratio that says nothing about the servers (1.05-1.57 in one earlier run).
// So judge a change of the c1 path here, "same" first (least noise), and compare only figures of one placement.
//
// Usage: node bench/c1-placement.mjs [json|binary] [rounds] [seconds]
// Environment: PLACEMENTS (comma-separated, default "same,apart,free"), ISOLATION (add_sub's operon_isolation,
// default inline), OPERON_BASE_ROOT (another built checkout, measured as "base"), DEFAULT_SCHEDULER=1 (add_sub
// without dynamic_batching and with one instance, as run-bench's add_sub_nodelay). Needs taskset (util-linux).
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { addSubRequest, writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { cpuUsOfStatLine } from "./lib/process-cpu.mjs";
import { startBaseline, startOperon } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const [kind = "json", roundsText = "5", secondsText = "2"] = process.argv.slice(2);
const PLACEMENTS = (process.env.PLACEMENTS ?? "same,apart,free").split(",");
const CORES = { same: { server: "0", client: "0" }, apart: { server: "1", client: "0" }, free: undefined };
for (const placement of PLACEMENTS) {
  if (!(placement in CORES)) throw new Error(`unknown placement '${placement}': use same, apart or free`);
}

const { repository, onnx } = writeAddSubRepository({
  isolation: process.env.ISOLATION ?? "inline",
  // null: no dynamic_batching (Triton's default scheduler).
  queueDelayUs: process.env.DEFAULT_SCHEDULER === "1" ? null : 0,
  ...(process.env.DEFAULT_SCHEDULER === "1" ? { instances: 1 } : {}),
  prefix: "operon-c1-placement-",
});
const { body, headers } = addSubRequest(kind);
const operonArgs = ["--load-model", "*", "--model-control-mode", "explicit"];
const allCores = execFileSync("nproc", ["--all"], { encoding: "utf8" }).trim();
const everyCore = `0-${Number(allCores) - 1}`;

/** Pins every thread of `pid` (threads started later inherit the main thread's mask) to `cores`. */
function pin(pid, cores) {
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      execFileSync("taskset", ["-p", "-c", cores, tid], { stdio: "ignore" });
    } catch {
      // The thread ended between the listing and taskset.
    }
  }
}

/** CPU (µs) the process's main thread has used: the thread a request's HTTP and inline work runs on. */
const mainThreadCpuUs = (pid) => cpuUsOfStatLine(readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8"));

const targets = [];
const operon = await startOperon(repository, operonArgs);
targets.push({ label: "operon", url: operon.httpUrl, pid: operon.pid, stop: operon.stop });
if (process.env.OPERON_BASE_ROOT !== undefined) {
  const base = await startOperon(repository, operonArgs, { root: process.env.OPERON_BASE_ROOT });
  targets.push({ label: "base", url: base.httpUrl, pid: base.pid, stop: base.stop });
}
const minimal = await startBaseline("minimal-http-ort-server.mjs", [onnx]);
targets.push({ label: "minimal", url: minimal.url, pid: minimal.pid, stop: minimal.stop });

const results = new Map();
try {
  for (let round = 1; round <= Number(roundsText); round++) {
    for (const placement of PLACEMENTS) {
      const cores = CORES[placement];
      for (const target of targets) pin(target.pid, cores?.server ?? everyCore);
      // wrk inherits this process's mask.
      pin(process.pid, cores?.client ?? everyCore);
      const row = [];
      // Each round starts with another target: the first one measured after the threads moved ran a little
      // slower in every round when the order was fixed.
      const order = targets.map((_, i) => targets[(i + round) % targets.length]);
      for (const target of order) {
        const request = wrkRequest(`${target.url}/v2/models/add_sub/infer`, body, headers);
        await runWrk(request, { connections: 1, seconds: 1 });
        const before = mainThreadCpuUs(target.pid);
        const result = await runWrk(request, { connections: 1, seconds: Number(secondsText) });
        const requests = result.requestsPerSec * Number(secondsText);
        const sample = {
          p50: result.p50Us,
          mean: 1e6 / result.requestsPerSec,
          cpu: (mainThreadCpuUs(target.pid) - before) / requests,
        };
        const key = `${placement} ${target.label}`;
        results.set(key, [...(results.get(key) ?? []), sample]);
        row.push(`${target.label} p50 ${sample.p50} mean ${sample.mean.toFixed(0)} cpu ${sample.cpu.toFixed(0)}`);
      }
      console.error(`round ${round} ${placement.padEnd(5)}  ${row.join("  |  ")}`);
    }
  }
} finally {
  pin(process.pid, everyCore);
  for (const target of targets) await target.stop();
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const range = (values) => `${Math.min(...values).toFixed(0)}-${Math.max(...values).toFixed(0)}`;
console.log(`\nc1 ${kind}, add_sub FP32 [1,16], no queue delay; medians of ${roundsText} rounds (range)\n`);
console.log("| placement | target | p50 µs | mean µs | main thread CPU µs / request | p50 / minimal's |");
console.log("|---|---|---:|---:|---:|---:|");
for (const placement of PLACEMENTS) {
  const minimalSamples = results.get(`${placement} minimal`);
  for (const target of targets) {
    const samples = results.get(`${placement} ${target.label}`);
    const p50 = samples.map((s) => s.p50);
    // Per round: each round's servers were measured back to back under the same placement.
    const ratios = samples.map((s, i) => s.p50 / minimalSamples[i].p50);
    console.log(
      `| ${placement} | ${target.label} | ${median(p50)} (${range(p50)}) | ${median(samples.map((s) => s.mean)).toFixed(0)} | ${median(samples.map((s) => s.cpu)).toFixed(0)} | ${median(ratios).toFixed(2)} |`,
    );
  }
}

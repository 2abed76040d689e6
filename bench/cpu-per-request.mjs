#!/usr/bin/env node
// CPU per request (µs, all threads of the server process, from /proc) for
// Operon and the minimal node:http+ORT server under the same wrk load: the
// figure that machine noise moves least, used to judge request-path changes.
// Usage: node bench/cpu-per-request.mjs [json|binary] [connections] [seconds]
// Environment: ISOLATION=thread|inline|process (default: the server's), INSTANCES (default 2), ROUNDS (default 2),
// QUEUE_DELAY_US (add_sub's max_queue_delay_microseconds, default 100),
// BY_THREAD=1 (each thread's share, from /proc/<pid>/task), OPERON_NODE_ARGS (node flags for Operon, space-separated),
// OPERON_BASE_ROOT=<another built checkout> (its operon measured in the same rounds too: an A/B of a change).
import { readdirSync, readFileSync } from "node:fs";
import { cpuUsOfStatLine, processCpuUs } from "./lib/process-cpu.mjs";
import { addSubRequest, writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { startBaseline, startOperon } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const [kind = "json", connections = "16", seconds = "4"] = process.argv.slice(2);
const ISOLATION = process.env.ISOLATION ?? "";
const INSTANCES = Number(process.env.INSTANCES ?? 2);
const BY_THREAD = process.env.BY_THREAD === "1";

const { repository, onnx } = writeAddSubRepository({
  isolation: ISOLATION,
  instances: INSTANCES,
  prefix: "operon-cpu-",
});
const { body, headers } = addSubRequest(kind);

/** Voluntary context switches (the thread slept, so something had to wake it) in a /proc/.../status text. */
function voluntarySwitches(status) {
  return Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

/**
 * CPU µs and voluntary context switches of each thread of the process, by thread id, with the thread's name
 * (comm). A wake-up per request is what costs latency at concurrency 1 on a VM: each is a cross-core
 * interrupt when the waker runs on another core.
 */
function threadCpuUs(pid) {
  const threads = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const switches = voluntarySwitches(readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8"));
      threads.set(tid, { name, cpu: cpuUsOfStatLine(stat), switches });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return threads;
}

async function measure(label, url, pid) {
  const request = wrkRequest(`${url}/v2/models/add_sub/infer`, body, headers);
  await runWrk(request, { connections: Number(connections), seconds: 1 });
  const before = processCpuUs(pid);
  const threadsBefore = BY_THREAD ? threadCpuUs(pid) : undefined;
  const result = await runWrk(request, { connections: Number(connections), seconds: Number(seconds) });
  const cpu = processCpuUs(pid) - before;
  const requests = result.requestsPerSec * Number(seconds);
  console.log(
    `${label.padEnd(10)} ${result.requestsPerSec.toFixed(0).padStart(6)} req/s  p50 ${String(result.p50Us).padStart(5)} µs  CPU ${(cpu / requests).toFixed(1).padStart(6)} µs/req  errors ${result.errors}`,
  );
  if (threadsBefore !== undefined) printThreads(threadsBefore, threadCpuUs(pid), requests);
  return { requestsPerSec: result.requestsPerSec, cpuPerRequest: cpu / requests };
}

/**
 * BY_THREAD=1: the CPU and wake-ups per request of each thread that used at least 1 µs/req or woke at least
 * once per 100 requests, busiest first.
 */
function printThreads(before, after, requests) {
  const rows = [];
  for (const [tid, { name, cpu, switches }] of after) {
    const used = (cpu - (before.get(tid)?.cpu ?? 0)) / requests;
    const wakes = (switches - (before.get(tid)?.switches ?? 0)) / requests;
    if (used >= 1 || wakes >= 0.01) rows.push({ tid, name, used, wakes });
  }
  for (const row of rows.sort((a, b) => b.used - a.used)) {
    console.log(
      `    thread ${row.tid.padStart(7)} ${row.name.padEnd(16)} ${row.used.toFixed(1).padStart(6)} µs/req  ${row.wakes.toFixed(2).padStart(5)} wake-ups/req`,
    );
  }
}

const nodeArgs = (process.env.OPERON_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "");
const operonArgs = ["--load-model", "*", "--model-control-mode", "explicit"];
const operon = await startOperon(repository, operonArgs, { nodeArgs });
const baseRoot = process.env.OPERON_BASE_ROOT;
const base =
  baseRoot === undefined ? undefined : await startOperon(repository, operonArgs, { nodeArgs, root: baseRoot });
const minimal = await startBaseline("minimal-http-ort-server.mjs", [onnx]);
try {
  for (let round = 0; round < Number(process.env.ROUNDS ?? 2); round++) {
    const a = await measure("operon", operon.httpUrl, operon.pid);
    const b = await measure("minimal", minimal.url, minimal.pid);
    if (base === undefined) {
      console.log(`ratio ${(a.requestsPerSec / b.requestsPerSec).toFixed(2)}`);
      continue;
    }
    const c = await measure("base", base.httpUrl, base.pid);
    console.log(
      `ratio ${(a.requestsPerSec / b.requestsPerSec).toFixed(2)}, base ${(c.requestsPerSec / b.requestsPerSec).toFixed(2)}; CPU per request operon/base ${(a.cpuPerRequest / c.cpuPerRequest).toFixed(3)}`,
    );
  }
} finally {
  await operon.stop();
  await base?.stop();
  await minimal.stop();
}

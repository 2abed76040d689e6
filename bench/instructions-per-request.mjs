#!/usr/bin/env node
// Instructions the server's main thread executes per concurrency-1 request, counted by Valgrind's callgrind:
// Operon against the minimal node:http+ORT server (and, with OPERON_BASE_ROOT, another built checkout's Operon),
// add_sub FP32 [1,16] JSON without a queue delay (one inline instance, no dynamic batching: the bench's c1 model).
// Prints instructions per request for each, then the functions whose instructions differ most from the first
// other target's (JIT-compiled JavaScript named through node's --perf-basic-prof-only-functions map).
//
// Why: on these shared 2-vCPU hosts a CPU or latency A/B of a few µs drowns in noise (10-40 % between rounds),
// while an optimized JavaScript function's instructions per request repeat exactly from run to run. The totals
// move more (357k-414k for the same Operon build, 2026-12-07): how many scavenges fall in the window and which
// functions still run unoptimized (Builtins_LoadIC and the *Baseline builtins) vary. It measures warm work only:
// what a cold core pays on top (cache and TLB misses after each sleep) it does not see, so judge a change by its
// own functions' lines here, and confirm it with bench/c1-placement.mjs. Under Valgrind a server runs about 60x
// slower: a few minutes a target.
//
// Usage: node bench/instructions-per-request.mjs [measured requests=2000] [warm-up requests=12000] [top=40]
// Environment: OPERON_BASE_ROOT=<another built checkout> (measured as "base"), TARGETS (comma-separated subset of
// operon,base,minimal). Needs valgrind (Debian: valgrind) and callgrind_annotate.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addSubRequest, writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { ROOT, operonServeArgs } from "./lib/processes.mjs";

const [measuredText = "2000", warmText = "12000", topText = "40"] = process.argv.slice(2);
const MEASURED = Number(measuredText);
const WARM = Number(warmText);
const TOP = Number(topText);
const BASE_ROOT = process.env.OPERON_BASE_ROOT;

const { repository, onnx } = writeAddSubRepository({
  isolation: "inline",
  queueDelayUs: null,
  instances: 1,
  prefix: "operon-instructions-",
});
const { body, headers } = addSubRequest("json");
const outDir = mkdtempSync(join(tmpdir(), "operon-callgrind-"));

// No usage sampler: its scrapes come by the clock, and under Valgrind a second holds ~60x fewer requests.
const operonArgs = (root) => operonServeArgs(repository, ["--usage-sample-secs", "0"], root);
const ALL_TARGETS = [
  { name: "operon", args: operonArgs(ROOT), ready: /HTTP on http:\/\/[^:]+:(\d+)/ },
  ...(BASE_ROOT ? [{ name: "base", args: operonArgs(BASE_ROOT), ready: /HTTP on http:\/\/[^:]+:(\d+)/ }] : []),
  {
    name: "minimal",
    args: [join(ROOT, "bench/baselines/minimal-http-ort-server.mjs"), onnx, "0"],
    ready: /listening (\d+)/,
  },
];
const chosen = process.env.TARGETS?.split(",");
const targets = chosen ? ALL_TARGETS.filter((target) => chosen.includes(target.name)) : ALL_TARGETS;

const results = [];
for (const target of targets) results.push(await measure(target));
console.log(`\nmain thread instructions per c1 request (add_sub JSON, ${MEASURED} requests after ${WARM} warm-up)\n`);
for (const result of results)
  console.log(`  ${result.name.padEnd(8)} ${Math.round(result.total).toLocaleString("en")}`);
const [first, ...others] = results;
for (const other of others) {
  console.log(
    `\n${first.name} / ${other.name}: ${(first.total / other.total).toFixed(3)}; largest differences (per request):`,
  );
  const names = new Set([...first.functions.keys(), ...other.functions.keys()]);
  const rows = [...names].map((name) => [name, (first.functions.get(name) ?? 0) - (other.functions.get(name) ?? 0)]);
  rows.sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]));
  for (const [name, delta] of rows.slice(0, TOP))
    console.log(`  ${(delta > 0 ? "+" : "") + Math.round(delta)}`.padEnd(10) + `  ${name.slice(0, 140)}`);
}
console.log(`\ncallgrind files: ${outDir}`);

/** Runs one server under callgrind, warms it, counts MEASURED requests; its main thread's instructions by function. */
async function measure(target) {
  const outFile = join(outDir, `${target.name}.%p`);
  const child = spawn(
    "valgrind",
    [
      "--tool=callgrind",
      // V8 writes code into memory it then runs: without this Valgrind would run stale translations.
      "--smc-check=all-non-file",
      "--instr-atstart=no",
      "--separate-threads=yes",
      `--callgrind-out-file=${outFile}`,
      process.execPath,
      "--perf-basic-prof-only-functions",
      ...target.args,
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${target.name} did not start under valgrind: ${output}`)),
      300_000,
    );
    const onData = (chunk) => {
      output += chunk;
      const match = target.ready.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => reject(new Error(`${target.name} exited (${code}) under valgrind: ${output}`)));
  });
  const pid = child.pid;
  try {
    const url = `http://127.0.0.1:${port}/v2/models/add_sub/infer`;
    await sendSequentially(url, WARM);
    callgrindControl(["-z", String(pid)]);
    callgrindControl(["-i", "on", String(pid)]);
    await sendSequentially(url, MEASURED);
    callgrindControl(["-i", "off", String(pid)]);
    callgrindControl(["-d", String(pid)]);
  } finally {
    child.kill("SIGKILL");
  }
  // With --separate-threads, thread 1 (the main thread) of the first dump is <file>.<pid>.1-01.
  const dump = join(outDir, `${target.name}.${pid}.1-01`);
  for (let i = 0; i < 50 && !existsSync(dump); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  const functions = functionsOf(dump, readPerfMap(pid));
  let total = 0;
  for (const value of functions.values()) total += value;
  for (const [name, value] of functions) functions.set(name, value / MEASURED);
  process.stderr.write(`${target.name}: ${Math.round(total / MEASURED)} instructions a request (${dump})\n`);
  return { name: target.name, total: total / MEASURED, functions };
}

function callgrindControl(args) {
  const result = spawnSync("callgrind_control", args, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`callgrind_control ${args.join(" ")}: ${result.stderr || result.stdout}`);
}

/** `count` sequential POSTs over one keep-alive connection: concurrency 1. */
async function sendSequentially(url, count) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const length = Buffer.byteLength(body);
  try {
    for (let i = 0; i < count; i++) {
      await new Promise((resolve, reject) => {
        const request = http.request(url, { method: "POST", agent, headers: { ...headers, "content-length": length } });
        request.on("response", (response) => {
          response.resume();
          response.on("end", () =>
            response.statusCode === 200 ? resolve() : reject(new Error(`${url}: ${response.statusCode}`)),
          );
        });
        request.on("error", reject);
        request.end(body);
      });
    }
  } finally {
    agent.destroy();
  }
}

/** node's /tmp/perf-<pid>.map: sorted [start, end, name] of JIT code. */
function readPerfMap(pid) {
  const file = `/tmp/perf-${pid}.map`;
  if (!existsSync(file)) return [];
  const entries = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const [start, size, ...name] = line.split(" ");
    if (name.length === 0) continue;
    const from = Number.parseInt(start, 16);
    entries.push([from, from + Number.parseInt(size, 16), name.join(" ").replace(/^JS:[*^~+]?/, "JS ")]);
  }
  return entries.sort((a, b) => a[0] - b[0]);
}

/** Self instructions by function name from one callgrind dump, JIT addresses named through the perf map. */
function functionsOf(file, perfMap) {
  const annotated = spawnSync("callgrind_annotate", ["--threshold=100", file], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  if (annotated.status !== 0) throw new Error(`callgrind_annotate ${file}: ${annotated.stderr}`);
  const functions = new Map();
  for (const line of annotated.stdout.split("\n")) {
    const match = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
    if (!match || match[2].includes("PROGRAM TOTALS")) continue;
    const count = Number(match[1].replaceAll(",", ""));
    let name = match[2];
    const address = /^\?\?\?:0x([0-9a-f]+) \[\?\?\?\]$/.exec(name);
    if (address) name = jitName(perfMap, Number.parseInt(address[1], 16));
    else name = name.replace(/\s*\[[^\]]*\]$/, "").replace(/^\?\?\?:/, "");
    // One name for the same code in both checkouts, so an A/B lines them up.
    for (const root of BASE_ROOT ? [ROOT, BASE_ROOT] : [ROOT])
      name = name.replaceAll(`file://${root}/`, "").replaceAll(`${root}/`, "");
    functions.set(name, (functions.get(name) ?? 0) + count);
  }
  return functions;
}

function jitName(perfMap, address) {
  let low = 0;
  let high = perfMap.length - 1;
  let found = -1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (perfMap[mid][0] <= address) {
      found = mid;
      low = mid + 1;
    } else high = mid - 1;
  }
  return found >= 0 && address < perfMap[found][1] ? perfMap[found][2] : "JIT code (unnamed)";
}

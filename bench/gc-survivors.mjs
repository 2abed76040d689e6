#!/usr/bin/env node
// What survives the gateway's scavenges, per request, under wrk: a server started with --trace-gc-nvp, its
// scavenge lines summed over a timed window. A request path whose garbage dies young shows a few hundred bytes
// per request; a chain of dead old objects pointing at newer requests (nepotism) shows whole requests promoted.
// Usage: node bench/gc-survivors.mjs [json|binary|grpc-none] [connections] [seconds]
// Environment: ISOLATION, INSTANCES, OPERON_NODE_ARGS, BASELINE=1 (the minimal server instead).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { addSubRequest, writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { ROOT } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const [kind = "json", connections = "16", seconds = "4"] = process.argv.slice(2);
const { repository, onnx } = writeAddSubRepository({
  isolation: process.env.ISOLATION ?? "",
  instances: Number(process.env.INSTANCES ?? 2),
  prefix: "operon-gc-",
});
// QUEUE_DELAY_US: the model's max_queue_delay_microseconds ("none": no dynamic_batching block at all).
if (process.env.QUEUE_DELAY_US !== undefined) {
  const config = join(repository, "add_sub", "config.pbtxt");
  const delay = process.env.QUEUE_DELAY_US;
  const block = delay === "none" ? "" : `dynamic_batching { max_queue_delay_microseconds: ${delay} }`;
  writeFileSync(config, readFileSync(config, "utf8").replace(/dynamic_batching \{[^}]*\}/, block));
}
const extra = (process.env.OPERON_NODE_ARGS ?? "").split(" ").filter((a) => a !== "");
const baseline = process.env.BASELINE === "1";
const args = baseline
  ? [...extra, "--trace-gc-nvp", join(ROOT, "bench/baselines/minimal-http-ort-server.mjs"), onnx, "0"]
  : [
      ...extra,
      "--trace-gc-nvp",
      join(ROOT, "apps/cli/bin/operon.js"),
      "serve",
      "--model-repository",
      repository,
      "--http-port",
      "0",
      "--grpc-port",
      "0",
      "--metrics-port",
      "0",
      "--api-port",
      "0",
      "--console=false",
      "--log-verbose",
      "0",
      "--data-dir",
      mkdtempSync(join(tmpdir(), "operon-gc-data-")),
    ];
const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
let text = "";
let marks = { start: -1, stop: -1 };
child.stdout.on("data", (chunk) => (text += chunk));
child.stderr.on("data", (chunk) => (text += chunk));
let url;
for (let waited = 0; url === undefined; waited += 100) {
  const match = /HTTP on (http:\/\/[^\s,]+)/.exec(text) ?? /listening (\d+)/.exec(text);
  if (match) url = match[1].startsWith("http") ? match[1] : `http://127.0.0.1:${match[1]}`;
  if (waited > 60_000) throw new Error(`server did not start:\n${text.slice(-2000)}`);
  await sleep(100);
}
const { body: goodBody, headers } = addSubRequest(kind);
// BODY_REPLACE=from=>to: a variant of the body (e.g. a wrong input name, refused by validation), to bisect the path.
const [from, to] = (process.env.BODY_REPLACE ?? "=>").split("=>");
const body = from === "" ? goodBody : String(goodBody).replace(from, to);
// URL_PATH: another endpoint under the same load (e.g. a missing model), to tell the frontend's share from the engine's.
const request = wrkRequest(`${url}${process.env.URL_PATH ?? "/v2/models/add_sub/infer"}`, body, headers);
await runWrk(request, { connections: Number(connections), seconds: 2 });
marks.start = text.length;
const result = await runWrk(request, { connections: Number(connections), seconds: Number(seconds) });
marks.stop = text.length;
child.kill("SIGKILL");
const window = text.slice(marks.start, marks.stop);
if (process.env.DUMP_GC) writeFileSync(process.env.DUMP_GC, window);
const requests = result.requestsPerSec * Number(seconds);
// --trace-gc-nvp prints every isolate's collections ([pid:isolate] prefix): the instance threads, the decode pool
// and the control plane have their own heaps. The gateway's event loop is the isolate that allocates the most.
const byIsolate = new Map();
for (const line of window.split("\n")) {
  const isolate = /^\[\d+:(0x[0-9a-f]+)\]/.exec(line)?.[1];
  const kind = /\bgc=(\w+)/.exec(line)?.[1];
  if (isolate === undefined || kind === undefined) continue;
  let sums = byIsolate.get(isolate);
  if (sums === undefined)
    byIsolate.set(isolate, (sums = { scavenges: 0, majors: 0, promoted: 0, survived: 0, allocated: 0 }));
  const field = (name) => Number(new RegExp(`\\b${name}=(\\d+)`).exec(line)?.[1] ?? 0);
  if (kind === "s") {
    sums.scavenges++;
    sums.promoted += field("promoted");
    sums.survived += field("new_space_survived");
    sums.allocated += field("allocated");
  } else sums.majors++;
}
const main = [...byIsolate.values()].sort((a, b) => b.allocated - a.allocated)[0] ?? {
  scavenges: 0,
  majors: 0,
  promoted: 0,
  survived: 0,
  allocated: 0,
};
const perRequest = (bytes) => `${(bytes / requests).toFixed(0)} B`;
console.log(
  `${baseline ? "minimal" : "operon"} ${kind} c${connections}: ${result.requestsPerSec.toFixed(0)} req/s; main thread: ` +
    `${main.scavenges} scavenges, ${main.majors} major GCs; per request: allocated ${perRequest(main.allocated)}, ` +
    `survived a scavenge ${perRequest(main.survived)}, promoted ${perRequest(main.promoted)} ` +
    `(${((100 * main.promoted) / Math.max(main.allocated, 1)).toFixed(2)} % of allocation)`,
);

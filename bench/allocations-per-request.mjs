#!/usr/bin/env node
// Bytes allocated per request (garbage included) on each thread of Operon and of the minimal node:http+ORT
// server under the same wrk load, with the main thread's top allocation sites. Unlike time, allocation does
// not move with the host's load, so it judges request-path changes on a busy machine; what it costs shows
// as scavenges on the main thread and as the V8 helper threads' CPU in `BY_THREAD=1 cpu-per-request.mjs`.
// Usage: node bench/allocations-per-request.mjs [json|binary] [connections] [seconds] [top]
// Environment: ISOLATION=thread|inline|process, INSTANCES (default 2), OPERON_NODE_ARGS.
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { addSubRequest, writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { startBaseline, startOperon } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const [kind = "json", connections = "16", seconds = "4", top = "25"] = process.argv.slice(2);
const SAMPLER = new URL("./lib/allocation-sampler.mjs", import.meta.url).pathname;
const { repository, onnx } = writeAddSubRepository({
  isolation: process.env.ISOLATION ?? "",
  instances: Number(process.env.INSTANCES ?? 2),
  prefix: "operon-alloc-",
});
const { body, headers } = addSubRequest(kind);
const nodeArgs = ["--import", SAMPLER];
// OPERON_NODE_ARGS: node flags for Operon only (space-separated), e.g. V8 heap settings to compare.
const operonNodeArgs = (process.env.OPERON_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "");

/** Samples one server for `seconds` under wrk and prints each thread's bytes per request. */
async function sampleUnderLoad(label, url, env) {
  const request = wrkRequest(url, body, headers);
  await runWrk(request, { connections: Number(connections), seconds: 2 });
  writeFileSync(join(env.OPERON_ALLOC_DIR, "start"), "");
  await sleep(50); // every thread polls the trigger every 10 ms
  const result = await runWrk(request, { connections: Number(connections), seconds: Number(seconds) });
  writeFileSync(join(env.OPERON_ALLOC_DIR, "stop"), "");
  const requests = result.requestsPerSec * Number(seconds);
  // The main thread's profile (threadId 0) is the largest: wait for it, then a little for the other threads'.
  for (let waited = 0; !existsSync(join(env.OPERON_ALLOC_DIR, "profile-0.json")) && waited < 30_000; waited += 100) {
    await sleep(100);
  }
  await sleep(1000);
  const profiles = readdirSync(env.OPERON_ALLOC_DIR).filter((name) => name.startsWith("profile-"));
  console.log(`${label.padEnd(8)} ${result.requestsPerSec.toFixed(0)} req/s, errors ${result.errors}`);
  for (const name of profiles.sort()) {
    const { main, collections, profile } = JSON.parse(readFileSync(join(env.OPERON_ALLOC_DIR, name), "utf8"));
    const sites = selfBytesBySite(profile);
    const total = [...sites.values()].reduce((sum, bytes) => sum + bytes, 0);
    const perThousand = (count) => ((1000 * count) / requests).toFixed(2);
    console.log(
      `    ${(main ? "main thread" : `thread ${name.slice(8, -5)}`).padEnd(11)} ${(total / requests).toFixed(0).padStart(7)} B/req` +
        `  collections per 1k requests: ${perThousand(collections.minor)} minor, ${perThousand(collections.major)} major` +
        ` (${perThousand(collections.ms)} ms paused)`,
    );
    if (!main) continue;
    for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) {
      console.log(`      ${(bytes / requests).toFixed(0).padStart(6)} B/req  ${site}`);
    }
  }
}

/** Bytes allocated by each function itself (not its callees), keyed "name file:line". */
function selfBytesBySite(profile) {
  const sites = new Map();
  const stack = [profile.head];
  while (stack.length > 0) {
    const node = stack.pop();
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.replace(/^.*?\/(packages|node_modules|apps|bench)\//, "$1/");
    const site = `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`;
    if (node.selfSize > 0) sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    stack.push(...node.children);
  }
  return sites;
}

const operonEnv = { OPERON_ALLOC_DIR: mkdtempSync(join(tmpdir(), "operon-alloc-")) };
const minimalEnv = { OPERON_ALLOC_DIR: mkdtempSync(join(tmpdir(), "operon-alloc-")) };
const operon = await startOperon(repository, ["--load-model", "*", "--model-control-mode", "explicit"], {
  nodeArgs: [...operonNodeArgs, ...nodeArgs],
  env: operonEnv,
});
const minimal = await startBaseline("minimal-http-ort-server.mjs", [onnx], { nodeArgs, env: minimalEnv });
try {
  await sampleUnderLoad("operon", `${operon.httpUrl}/v2/models/add_sub/infer`, operonEnv);
  await sampleUnderLoad("minimal", `${minimal.url}/v2/models/add_sub/infer`, minimalEnv);
} finally {
  await operon.stop();
  await minimal.stop();
}

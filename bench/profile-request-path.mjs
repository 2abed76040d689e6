#!/usr/bin/env node
// Where the gateway's CPU goes per request: runs Operon under --cpu-prof with
// the wrk load of cpu-per-request.mjs, then prints the main thread's self time
// by function (top N) and by package, as shares of the sampled time.
// Usage: node bench/profile-request-path.mjs [json|binary] [connections] [seconds] [top]
// Environment: ISOLATION=thread|inline|process, INSTANCES (default 2), PROFILE_DIR (default a temp dir),
// PROFILE_OF=instance (the instance threads' profiles instead of the gateway thread's).
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addSubRequest, writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { startOperon } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const [kind = "json", connections = "16", seconds = "6", top = "40"] = process.argv.slice(2);
const ISOLATION = process.env.ISOLATION ?? "";
const INSTANCES = Number(process.env.INSTANCES ?? 2);
// The gateway thread's profile holds the HTTP frontend; an instance thread's holds thread-main.
const PROFILE_MARK = process.env.PROFILE_OF === "instance" ? "worker/dist/thread-main" : "frontends/http/http-frontend";
const profileDir = process.env.PROFILE_DIR ?? mkdtempSync(join(tmpdir(), "operon-prof-"));

const { repository } = writeAddSubRepository({
  isolation: ISOLATION,
  instances: INSTANCES,
  prefix: "operon-prof-repo-",
});
const { body, headers } = addSubRequest(kind);

const before = new Set(readdirSync(profileDir));
const operon = await startOperon(repository, ["--load-model", "*", "--model-control-mode", "explicit"], {
  nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`],
});
try {
  const request = wrkRequest(`${operon.httpUrl}/v2/models/add_sub/infer`, body, headers);
  await runWrk(request, { connections: Number(connections), seconds: 1 });
  const result = await runWrk(request, { connections: Number(connections), seconds: Number(seconds) });
  console.log(`operon ${result.requestsPerSec.toFixed(0)} req/s, p50 ${result.p50Us} µs, errors ${result.errors}`);
} finally {
  await operon.stop();
}

// The gateway's thread is the one whose profile holds the HTTP frontend (the
// control plane and the instance threads write profiles of their own).
const profiles = readdirSync(profileDir)
  .filter((name) => name.endsWith(".cpuprofile") && !before.has(name))
  .map((name) => join(profileDir, name))
  .filter((file) => readFileSync(file, "utf8").includes(PROFILE_MARK));
if (profiles.length === 0) throw new Error(`no .cpuprofile holding ${PROFILE_MARK} written in ${profileDir}`);
for (const file of profiles.slice(0, Number(process.env.PROFILES ?? 1))) summarise(file);

function summarise(file) {
  const profile = JSON.parse(readFileSync(file, "utf8"));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfSamples = new Map();
  for (const id of profile.samples) selfSamples.set(id, (selfSamples.get(id) ?? 0) + 1);
  const total = profile.samples.length;
  const byFunction = new Map();
  const byPackage = new Map();
  for (const [id, count] of selfSamples) {
    const frame = byId.get(id).callFrame;
    const where = frame.url.replace(/^file:\/\//, "").replace(/.*\/(packages|apps|node_modules)\//, "$1/");
    const key = `${frame.functionName || "(anonymous)"} ${where}:${frame.lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + count);
    const pkg = packageOf(frame.url);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + count);
  }
  // Inclusive: each sample counts once for every distinct function on its stack.
  const parentOf = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const inclusive = new Map();
  for (const [id, count] of selfSamples) {
    const seen = new Set();
    for (let at = id; at !== undefined; at = parentOf.get(at)) {
      const frame = byId.get(at).callFrame;
      if (frame.url === "") continue;
      const key = `${frame.functionName || "(anonymous)"} ${frame.url.replace(/.*\/(packages|apps|node_modules)\//, "$1/")}:${frame.lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + count);
    }
  }
  const idle = [...selfSamples]
    .filter(([id]) => byId.get(id).callFrame.functionName === "(idle)")
    .reduce((sum, [, n]) => sum + n, 0);
  const share = (count) => `${((100 * count) / total).toFixed(1).padStart(5)} %`;
  console.log(`busy (not idle): ${share(total - idle)}`);
  console.log(`\n${file}: ${total} samples`);
  console.log("by package:");
  for (const [pkg, count] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 20))
    console.log(`  ${share(count)}  ${pkg}`);
  console.log("by function (self):");
  for (const [key, count] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, Number(top)))
    console.log(`  ${share(count)}  ${key}`);
  console.log("by function (inclusive, Operon's code and node: core):");
  for (const [key, count] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, Number(top)))
    console.log(`  ${share(count)}  ${key}`);
}

function packageOf(url) {
  if (url === "") return "(native / VM)";
  if (url.startsWith("node:")) return "node: core";
  const match = /\/(packages|apps)\/([^/]+)\/(?:dist|src)\/(.*?)\/?[^/]*$/.exec(url);
  if (match) return `${match[1]}/${match[2]}/${match[3]}`;
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  return modules ? `node_modules/${modules[1]}` : url;
}

#!/usr/bin/env node
// What holds the gateway's event loop while the largest bodies arrive (bench
// section 5's attacks): runs Operon under --cpu-prof, sends one attack for a
// few seconds while a probe asks /v2/health/ready every 20 ms, then reads the
// gateway thread's profile for busy stretches (no idle sample) longer than a
// threshold and prints, per stretch and summed over them, where the time went.
// Usage: node bench/profile-stalls.mjs [grpc|binary|json] [seconds] [threshold ms]
// Environment: OPERON_NODE_ARGS (node flags for Operon, space-separated).
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { startOperon } from "./lib/processes.mjs";
import { startStallAttack, stopStallAttack, writeStallAttackFiles } from "./lib/stall-probe.mjs";

const [attack = "grpc", secondsText = "6", thresholdText = "20"] = process.argv.slice(2);
const files = mkdtempSync(join(tmpdir(), "operon-stall-files-"));
const profileDir = mkdtempSync(join(tmpdir(), "operon-stall-prof-"));
const { repository } = writeAddSubRepository({ prefix: "operon-stall-repo-" });

const operon = await startOperon(repository, ["--load-model", "*", "--model-control-mode", "explicit"], {
  nodeArgs: [
    "--cpu-prof",
    `--cpu-prof-dir=${profileDir}`,
    ...(process.env.OPERON_NODE_ARGS ?? "").split(" ").filter(Boolean),
  ],
});
const attacker = startStallAttack(operon, attack, writeStallAttackFiles(files));
const health = [];
try {
  await sleep(500);
  const end = Date.now() + Number(secondsText) * 1000;
  while (Date.now() < end) {
    const started = process.hrtime.bigint();
    const ready = await fetch(`${operon.httpUrl}/v2/health/ready`);
    health.push(Number(process.hrtime.bigint() - started) / 1e6);
    if (ready.status !== 200) throw new Error(`not ready: ${ready.status}`);
    await sleep(20);
  }
} finally {
  stopStallAttack(attacker);
  await operon.stop();
}
health.sort((a, b) => a - b);
const at = (q) => health[Math.min(health.length - 1, Math.floor(q * health.length))];
console.log(
  `${attack}: ${health.length} probes, health p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms, max ${health.at(-1).toFixed(1)} ms`,
);

const gateway = readdirSync(profileDir)
  .map((name) => join(profileDir, name))
  .find((file) => readFileSync(file, "utf8").includes("frontends/http/http-frontend"));
if (gateway === undefined) throw new Error(`no profile of the gateway thread in ${profileDir}`);
stretches(JSON.parse(readFileSync(gateway, "utf8")), Number(thresholdText));

/** Busy stretches: consecutive samples without an idle one, longer than thresholdMs; where their time went. */
function stretches(profile, thresholdMs) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const isIdle = (id) => byId.get(id).callFrame.functionName === "(idle)";
  const frameName = (frame) =>
    `${frame.functionName || "(anonymous)"} ${frame.url.replace(/.*\/(packages|node_modules)\//, "$1/").replace(/^node:internal\//, "node:")}:${frame.lineNumber + 1}`;
  const runs = [];
  let run;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    if (isIdle(id)) {
      if (run !== undefined && run.ms >= thresholdMs) runs.push(run);
      run = undefined;
      continue;
    }
    run ??= { ms: 0, self: new Map(), inclusive: new Map() };
    run.ms += ms;
    const leaf = byId.get(id).callFrame;
    const leafName = leaf.url === "" ? leaf.functionName : frameName(leaf);
    run.self.set(leafName, (run.self.get(leafName) ?? 0) + ms);
    const seen = new Set();
    for (let at = id; at !== undefined; at = parentOf.get(at)) {
      const frame = byId.get(at).callFrame;
      if (frame.url === "" || frame.url.startsWith("node:")) continue;
      const name = frameName(frame);
      if (seen.has(name)) continue;
      seen.add(name);
      run.inclusive.set(name, (run.inclusive.get(name) ?? 0) + ms);
    }
  }
  runs.sort((a, b) => b.ms - a.ms);
  const total = runs.reduce((sum, r) => sum + r.ms, 0);
  console.log(
    `busy stretches over ${thresholdMs} ms: ${runs.length}, ${total.toFixed(0)} ms in all; longest ${runs
      .slice(0, 8)
      .map((r) => r.ms.toFixed(0))
      .join(", ")} ms`,
  );
  const sum = (key) => {
    const all = new Map();
    for (const r of runs) for (const [name, ms] of r[key]) all.set(name, (all.get(name) ?? 0) + ms);
    return [...all].sort((a, b) => b[1] - a[1]).slice(0, 25);
  };
  console.log("self time in those stretches:");
  for (const [name, ms] of sum("self")) console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${name}`);
  console.log("inclusive (Operon and libraries) in those stretches:");
  for (const [name, ms] of sum("inclusive")) console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${name}`);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

#!/usr/bin/env node
// Bench section 5's stall probes, A/B: the same probes (GET /v2/health/ready,
// then a tiny add_sub inference, then 20 ms of sleep, for a few seconds) while
// one process sends the largest HTTP body again and again, against two or more
// built checkouts in interleaved rounds (the order flips every round), so that
// load from elsewhere on the host falls on each alike.
// Usage: node bench/stall-ab.mjs <rounds> <json|binary|grpc>[,…] <checkout root>…
// Prints one line per measurement and, per checkout and attack, the median and
// range over rounds of each p99.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { probeDuringAttack, writeStallAttackFiles } from "./lib/stall-probe.mjs";

const [roundsText = "3", kindsText = "json,binary", ...rootArgs] = process.argv.slice(2);
if (rootArgs.length === 0) throw new Error("usage: node bench/stall-ab.mjs <rounds> <json|binary|grpc>[,…] <root>…");
const roots = rootArgs.map((root) => resolve(root));
const kinds = kindsText.split(",");
const files = mkdtempSync(join(tmpdir(), "operon-stall-ab-"));
const { repository } = writeAddSubRepository({ prefix: "operon-stall-ab-repo-" });
const attackFiles = writeStallAttackFiles(files);
const results = new Map();

for (let round = 0; round < Number(roundsText); round += 1) {
  const order = round % 2 === 0 ? roots : [...roots].reverse();
  for (const root of order) {
    const { startOperon } = await import(pathToFileURL(join(root, "bench/lib/processes.mjs")).href);
    const operon = await startOperon(repository, ["--load-model", "*", "--model-control-mode", "explicit"]);
    try {
      for (const kind of kinds) {
        const figures = await probeDuringAttack(operon, kind, attackFiles);
        const key = `${kind} ${root}`;
        results.set(key, [...(results.get(key) ?? []), figures]);
        console.log(
          `round ${round + 1} ${kind.padEnd(6)} ${root}: health p99 ${figures.healthP99Ms.toFixed(1)} ms, tiny inference p99 ${figures.inferP99Ms.toFixed(1)} ms (max ${figures.inferMaxMs.toFixed(1)}), ${figures.probes} probes, RSS peak ${figures.gatewayRssPeakMiB.toFixed(0)} MiB`,
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
    `  ${key}: health p99 ${spread(list.map((f) => f.healthP99Ms))} ms, tiny inference p99 ${spread(list.map((f) => f.inferP99Ms))} ms, RSS peak ${spread(list.map((f) => f.gatewayRssPeakMiB))} MiB`,
  );
}
process.exit(0);

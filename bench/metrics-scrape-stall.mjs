#!/usr/bin/env node
// What a metrics scrape costs the gateway's event loop after a busy spell: add_sub served at concurrency 16 for a
// few seconds (every model version's latency rings full: 4,096 latencies per series), then one GET /metrics while a
// probe sends GET /v2/health/live back to back. Prints the scrape's own time and the longest probe wait during it
// (a request that arrived during the scrape waited that long), per round, then medians (ranges).
//
// Why: Triton's latency summaries (nv_inference_*_summary_us) are computed at scrape time, and a scrape comes every
// --usage-sample-secs (15 s) from the control plane plus whatever Prometheus does. Fed through prom-client's
// Summary (t-digests), one busy model's scrape held the loop for 20-70 ms.
//
// Usage: node bench/metrics-scrape-stall.mjs [rounds] [load seconds]   (after `npm run build`)
// Environment: OPERON_BASE_ROOT=<another built checkout> (its operon measured in the same rounds too: an A/B).
import http from "node:http";
import { addSubRequest, writeAddSubRepository } from "./lib/add-sub-load.mjs";
import { startOperon } from "./lib/processes.mjs";
import { runWrk, wrkRequest } from "./lib/wrk.mjs";

const [roundsText = "5", secondsText = "3"] = process.argv.slice(2);
const ROUNDS = Number(roundsText);
const LOAD_SECONDS = Number(secondsText);
const BASE_ROOT = process.env.OPERON_BASE_ROOT;

const { repository } = writeAddSubRepository({ prefix: "operon-scrape-" });
const { body, headers } = addSubRequest("json");
// Only this bench's scrapes: no usage sampler.
const ARGS = ["--usage-sample-secs", "0"];

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

/** GET `url`, resolved with its body once complete. */
function get(url) {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () =>
          res.statusCode === 200
            ? resolve(Buffer.concat(chunks).toString())
            : reject(new Error(`${url}: ${res.statusCode}`)),
        );
      })
      .on("error", reject);
  });
}

/** One scrape with a back-to-back liveness probe beside it: the scrape's ms and the probe's longest wait, ms. */
async function scrapeWithProbe(target) {
  let scraping = true;
  let longest = 0;
  const probe = (async () => {
    while (scraping) {
      const started = performance.now();
      await get(`${target.httpUrl}/v2/health/live`);
      longest = Math.max(longest, performance.now() - started);
    }
  })();
  const started = performance.now();
  const text = await get(target.metricsUrl);
  const scrapeMs = performance.now() - started;
  scraping = false;
  await probe;
  if (!text.includes('nv_inference_request_summary_us{quantile="0.99",model="add_sub"')) {
    throw new Error(`${target.name}: the scrape has no add_sub latency summary`);
  }
  return { scrapeMs, longestProbeMs: longest };
}

const targets = [];
try {
  targets.push({ name: "operon", ...(await startOperon(repository, ARGS)) });
  if (BASE_ROOT !== undefined)
    targets.push({ name: "base", ...(await startOperon(repository, ARGS, { root: BASE_ROOT })) });
  const results = Object.fromEntries(targets.map((target) => [target.name, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of round % 2 === 1 ? targets : [...targets].reverse()) {
      // The spell of traffic since the last scrape: more than 4,096 requests fill every series' ring.
      const load = await runWrk(wrkRequest(`${target.httpUrl}/v2/models/add_sub/infer`, body, headers), {
        connections: 16,
        seconds: LOAD_SECONDS,
      });
      const result = await scrapeWithProbe(target);
      results[target.name].push(result);
      process.stderr.write(
        `round ${round} ${target.name.padEnd(7)} ${Math.round(load.requestsPerSec)} req/s before; scrape ${result.scrapeMs.toFixed(1)} ms, longest probe wait ${result.longestProbeMs.toFixed(1)} ms\n`,
      );
    }
  }
  console.log(`\nGET /metrics after ${LOAD_SECONDS} s of add_sub at c16; medians of ${ROUNDS} rounds (range)\n`);
  console.log("| target | scrape ms | longest liveness probe wait during it, ms |");
  console.log("|---|---:|---:|");
  for (const { name } of targets) {
    const list = results[name];
    console.log(`| ${name} | ${spread(list.map((r) => r.scrapeMs))} | ${spread(list.map((r) => r.longestProbeMs))} |`);
  }
} finally {
  agent.destroy();
  for (const target of targets) await target.stop();
}

function spread(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return `${median.toFixed(1)} (${sorted[0].toFixed(1)}–${sorted[sorted.length - 1].toFixed(1)})`;
}

#!/usr/bin/env node
// `npm run bench:scheduler`: a step in demand on one model, served with a
// fixed config (one instance, --resource-scheduler=false) and with the
// resource scheduler; prints the time to scale and the p99 during the step,
// and writes bench/results/scheduler-step.md. About two minutes. Needs the
// build (npm run build). Not a test: the figures depend on the machine.
//
// The model ("wait20") is a TypeScript model that waits 20 ms per execution
// without using the CPU: a stand-in for an accelerator or a remote call,
// where more instances add capacity even on a 2-core machine (a CPU-bound
// model could not gain from more instances than cores). One instance serves
// about 50-100 req/s (the gateway pipelines 2 executions per instance); the
// scheduler is told 50 req/s per instance (--scheduler-default-capacity-rps,
// what a perf report would say), with a 2 s period.
//
// Load: open loop, BASE req/s for BASE_SECS, then STEP req/s for STEP_SECS
// (arrivals on a fixed schedule; at most MAX_IN_FLIGHT outstanding, beyond
// that an arrival is counted as shed by the client).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, startOperon } from "./lib/processes.mjs";

const BASE = Number(process.env.OPERON_BENCH_STEP_BASE ?? 20);
const STEP = Number(process.env.OPERON_BENCH_STEP_RPS ?? 300);
const BASE_SECS = Number(process.env.OPERON_BENCH_STEP_BASE_SECS ?? 10);
const STEP_SECS = Number(process.env.OPERON_BENCH_STEP_SECS ?? 30);
const WINDOW_SECS = 5;
const MAX_IN_FLIGHT = 512;
const P99_BUDGET_MS = 100;

function writeRepository() {
  const root = mkdtempSync(join(tmpdir(), "operon-bench-step-"));
  mkdirSync(join(root, "wait20", "1"), { recursive: true });
  writeFileSync(
    join(root, "wait20", "config.pbtxt"),
    `name: "wait20"
backend: "typescript"
max_batch_size: 0
input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 16 ] } ]
output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 16 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
`,
  );
  writeFileSync(
    join(root, "wait20", "1", "model.ts"),
    `// Waits 20 ms per execution (an accelerator or remote call's stand-in), then echoes INPUT0.
export default class Wait20 {
  async execute(requests, ctx) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    return requests.map((request) => {
      const x = request.input("INPUT0");
      return { outputs: [ctx.tensor.float32("OUTPUT0", x.shape, x.toFloat32Array())] };
    });
  }
}
`,
  );
  return root;
}

const BODY = JSON.stringify({
  inputs: [{ name: "INPUT0", datatype: "FP32", shape: [16], data: Array.from({ length: 16 }, (_, i) => i) }],
});

function quantile(sorted, q) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function instances(httpUrl) {
  try {
    const body = await (await fetch(`${httpUrl}/v2/operon/workers`)).json();
    return body.workers.filter((worker) => worker.model === "wait20" && worker.state === "READY").length;
  } catch {
    return null;
  }
}

async function scenario(name, repository, extraArgs) {
  const server = await startOperon(repository, [
    "--model-control-mode",
    "explicit",
    "--load-model",
    "wait20",
    "--database-url",
    "memory:",
    ...extraArgs,
  ]);
  try {
    // Warm-up: the worker's first requests.
    for (let i = 0; i < 20; i += 1)
      await (
        await fetch(`${server.httpUrl}/v2/models/wait20/infer`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: BODY,
        })
      ).arrayBuffer();
    const samples = []; // { sentAt (s from start), latencyMs, ok }
    const arrivals = []; // every arrival's time (sent or shed)
    const counts = []; // { at, instances }
    let inFlight = 0;
    let shed = 0;
    const start = performance.now();
    const totalSecs = BASE_SECS + STEP_SECS;
    let polling = true;
    const poller = (async () => {
      while (polling) {
        counts.push({ at: (performance.now() - start) / 1000, instances: await instances(server.httpUrl) });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    })();
    const pending = [];
    let next = 0;
    for (;;) {
      const elapsed = (performance.now() - start) / 1000;
      if (elapsed >= totalSecs) break;
      // Fire every arrival whose time has come (open loop).
      while (next <= elapsed) {
        const sentAt = next;
        next += 1 / (sentAt < BASE_SECS ? BASE : STEP);
        arrivals.push(sentAt);
        if (inFlight >= MAX_IN_FLIGHT) {
          shed += 1;
          continue;
        }
        inFlight += 1;
        const t0 = performance.now();
        pending.push(
          fetch(`${server.httpUrl}/v2/models/wait20/infer`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: BODY,
          })
            .then(async (response) => {
              await response.arrayBuffer();
              samples.push({ sentAt, latencyMs: performance.now() - t0, ok: response.ok });
            })
            .catch(() => samples.push({ sentAt, latencyMs: performance.now() - t0, ok: false }))
            .finally(() => (inFlight -= 1)),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await Promise.all(pending);
    polling = false;
    await poller;

    const windows = [];
    for (let from = 0; from < totalSecs; from += WINDOW_SECS) {
      const inWindow = samples.filter((sample) => sample.sentAt >= from && sample.sentAt < from + WINDOW_SECS);
      const latencies = inWindow
        .filter((sample) => sample.ok)
        .map((sample) => sample.latencyMs)
        .sort((a, b) => a - b);
      const instanceReadings = counts
        .filter((count) => count.at >= from && count.at < from + WINDOW_SECS && count.instances !== null)
        .map((count) => count.instances);
      windows.push({
        from,
        offered: arrivals.filter((at) => at >= from && at < from + WINDOW_SECS).length / WINDOW_SECS,
        completedRps: latencies.length / WINDOW_SECS,
        errors: inWindow.filter((sample) => !sample.ok).length,
        p50: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        instances: instanceReadings.length ? Math.max(...instanceReadings) : null,
      });
    }
    const stepLatencies = samples
      .filter((sample) => sample.sentAt >= BASE_SECS && sample.ok)
      .map((sample) => sample.latencyMs)
      .sort((a, b) => a - b);
    const firstCount = counts.find((count) => count.instances !== null)?.instances ?? null;
    const grewAt = counts.find(
      (count) =>
        count.at >= BASE_SECS && count.instances !== null && firstCount !== null && count.instances > firstCount,
    )?.at;
    const maxCount = Math.max(...counts.filter((count) => count.instances !== null).map((count) => count.instances));
    const settledAt = counts.find((count) => count.at >= BASE_SECS && count.instances === maxCount)?.at;
    // Recovery: the first window of the step whose p99 is within the budget again.
    const recovered = windows.find(
      (window) => window.from >= BASE_SECS && window.p99 !== null && window.p99 <= P99_BUDGET_MS,
    );
    return {
      name,
      windows,
      stepP99: quantile(stepLatencies, 0.99),
      stepP50: quantile(stepLatencies, 0.5),
      errors: samples.filter((sample) => !sample.ok).length,
      shed,
      completed: samples.filter((sample) => sample.ok).length,
      instancesBefore: firstCount,
      instancesAfter: maxCount,
      firstScaleSecs: grewAt === undefined ? null : grewAt - BASE_SECS,
      fullScaleSecs: settledAt === undefined || maxCount === firstCount ? null : settledAt - BASE_SECS,
      p99WithinBudgetFromSecs: recovered === undefined ? null : recovered.from - BASE_SECS,
    };
  } finally {
    await server.stop();
  }
}

const fmt = (value, digits = 0) => (value === null || value === undefined ? "—" : Number(value).toFixed(digits));

function report(results) {
  const lines = [];
  lines.push(`# Resource scheduler: a step in demand`, "");
  lines.push(
    `Run ${new Date().toISOString()} on ${process.env.HOSTNAME ?? "this host"} (\`npm run bench:scheduler\`).`,
  );
  lines.push(
    `Model: wait20 (TypeScript, waits 20 ms per execution, unbatched). Load: open loop, ${BASE} req/s for ${BASE_SECS} s, then ${STEP} req/s for ${STEP_SECS} s (at most ${MAX_IN_FLIGHT} in flight; arrivals beyond are shed by the client). Scheduler: period 2 s, 50 req/s per instance assumed, headroom 25 %, up to 8 instances.`,
    "",
  );
  lines.push(
    "| config | instances before → after | first scale-up after the step | at full count after | p99 ≤ 100 ms again from | step p50 | step p99 | completed | errors | shed |",
  );
  lines.push("|---|---|---|---|---|---|---|---|---|---|");
  for (const r of results) {
    lines.push(
      `| ${r.name} | ${r.instancesBefore} → ${r.instancesAfter} | ${r.firstScaleSecs === null ? "—" : `${fmt(r.firstScaleSecs, 1)} s`} | ${r.fullScaleSecs === null ? "—" : `${fmt(r.fullScaleSecs, 1)} s`} | ${r.p99WithinBudgetFromSecs === null ? "never" : `${r.p99WithinBudgetFromSecs} s`} | ${fmt(r.stepP50)} ms | ${fmt(r.stepP99)} ms | ${r.completed} | ${r.errors} | ${r.shed} |`,
    );
  }
  for (const r of results) {
    lines.push("", `## ${r.name}: per ${WINDOW_SECS} s window (by send time)`, "");
    lines.push("| from (s) | offered req/s | completed req/s | instances | p50 ms | p99 ms | errors |");
    lines.push("|---|---|---|---|---|---|---|");
    for (const w of r.windows)
      lines.push(
        `| ${w.from} | ${fmt(w.offered)} | ${fmt(w.completedRps)} | ${w.instances ?? "—"} | ${fmt(w.p50)} | ${fmt(w.p99)} | ${w.errors} |`,
      );
  }
  return lines.join("\n") + "\n";
}

const repository = writeRepository();
const results = [];
results.push(await scenario("fixed (1 instance, scheduler off)", repository, ["--resource-scheduler=false"]));
results.push(
  await scenario("scheduler", repository, [
    "--scheduler-period-secs",
    "2",
    "--scheduler-default-capacity-rps",
    "50",
    "--max-instances-per-model",
    "8",
    "--scheduler-cpu-slots",
    "16",
  ]),
);
const text = report(results);
process.stdout.write(text);
if (process.env.OPERON_BENCH_NO_WRITE !== "1") {
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  writeFileSync(join(ROOT, "bench/results/scheduler-step.md"), text);
}

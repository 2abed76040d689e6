#!/usr/bin/env node
// `npm run bench:scheduler-operator`: an operator step in demand (issue 25),
// served with a fixed config (one instance per step model, the scheduler off)
// and with the operator-aware resource scheduler; prints per config the
// instances of each step model, the time to the first scale-up, the p99 and
// the throughput during the step, and writes
// bench/results/scheduler-operator-step.md. About two minutes. Needs the
// build (npm run build). Not a test: the figures depend on the machine.
//
// The operator `pipe`: step `first` (model wait10, 10 ms per execution) then
// step `second` (wait30, 30 ms: 3× slower), TypeScript models that wait
// without using the CPU (an accelerator's or a remote call's stand-in), one
// instance each, unbatched. In the scheduler run, real perf runs through the
// control plane's API measure both models first (the per-instance capacities
// the scheduler reads), with the scheduler switched off; then it is switched
// on and the load starts.
//
// Load: open loop, BASE operator req/s for BASE_SECS, then STEP req/s for
// STEP_SECS (arrivals on a fixed schedule; at most MAX_IN_FLIGHT outstanding,
// beyond that an arrival is counted as shed by the client).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createTRPCClient, httpLink } from "@trpc/client";
import { ROOT, startOperon } from "./lib/processes.mjs";

const BASE = Number(process.env.OPERON_BENCH_STEP_BASE ?? 10);
const STEP = Number(process.env.OPERON_BENCH_STEP_RPS ?? 100);
const BASE_SECS = Number(process.env.OPERON_BENCH_STEP_BASE_SECS ?? 10);
const STEP_SECS = Number(process.env.OPERON_BENCH_STEP_SECS ?? 30);
const WINDOW_SECS = 5;
const MAX_IN_FLIGHT = 512;
const P99_BUDGET_MS = 100;
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };
const MODELS = [
  ["wait10", 10],
  ["wait30", 30],
];

function writeRepository() {
  const root = mkdtempSync(join(tmpdir(), "operon-bench-op-step-"));
  for (const [name, ms] of MODELS) {
    mkdirSync(join(root, name, "1"), { recursive: true });
    writeFileSync(
      join(root, name, "config.pbtxt"),
      `name: "${name}"
backend: "typescript"
max_batch_size: 0
input [ { name: "IN", data_type: TYPE_FP32, dims: [ 16 ] } ]
output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 16 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
`,
    );
    writeFileSync(
      join(root, name, "1", "model.ts"),
      `// Waits ${ms} ms per execution (an accelerator or remote call's stand-in), then echoes IN.
export default class {
  async execute(requests) {
    await new Promise((resolve) => setTimeout(resolve, ${ms}));
    return requests.map((request) => ({ outputs: [request.input("IN").rename("OUT")] }));
  }
}
`,
    );
  }
  return root;
}

const PIPE = {
  name: "pipe",
  inputs: [{ name: "IN", datatype: "FP32", dims: [16] }],
  outputs: [{ name: "OUT", datatype: "FP32", dims: [16] }],
  steps: [
    { id: "first", kind: "model", model: "wait10", inputs: { IN: "IN" }, outputs: { OUT: "mid" } },
    { id: "second", kind: "model", model: "wait30", inputs: { IN: "mid" }, outputs: { OUT: "OUT" } },
  ],
};

const BODY = JSON.stringify({
  inputs: [{ name: "IN", datatype: "FP32", shape: [16], data: Array.from({ length: 16 }, (_, i) => i) }],
});

/** A tRPC client that keeps the session and CSRF cookies, as the console's browser does. */
function apiClient(apiUrl) {
  const cookies = new Map();
  const jarFetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    if (cookies.size > 0) headers.set("cookie", [...cookies].map(([name, value]) => `${name}=${value}`).join("; "));
    if (cookies.has("operon_csrf")) headers.set("x-csrf-token", cookies.get("operon_csrf"));
    const response = await fetch(input, { ...init, headers });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const eq = pair.indexOf("=");
      cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    return response;
  };
  return createTRPCClient({ links: [httpLink({ url: `${apiUrl}/api/trpc`, fetch: jarFetch })] });
}

async function measure(api, model) {
  const { id } = await api.perf.start.mutate({
    target: { kind: "MODEL", name: model },
    concurrency: { start: 2, end: 2, step: 1 },
    measurementIntervalMs: 2000,
    maxTrials: 3,
  });
  for (;;) {
    const report = await api.perf.get.query({ id });
    if (report.status === "SUCCEEDED") return report.summary?.best?.throughput ?? null;
    if (report.status !== "RUNNING" && report.status !== "QUEUED")
      throw new Error(`perf run of ${model}: ${report.status} ${report.error ?? ""}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function quantile(sorted, q) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function instances(httpUrl) {
  try {
    const body = await (await fetch(`${httpUrl}/v2/operon/workers`)).json();
    const count = (model) => body.workers.filter((w) => w.model === model && w.state === "READY").length;
    return { first: count("wait10"), second: count("wait30") };
  } catch {
    return null;
  }
}

async function scenario(name, repository, schedulerOn) {
  const server = await startOperon(
    repository,
    [
      "--model-control-mode",
      "explicit",
      "--load-model",
      "wait10",
      "--load-model",
      "wait30",
      "--database-url",
      "memory:",
      "--admin-email",
      ADMIN.email,
      "--resource-scheduler=false",
      "--scheduler-period-secs",
      "2",
      "--max-instances-per-model",
      "8",
      "--scheduler-cpu-slots",
      "16",
    ],
    // A shared host may take a while to start a control plane.
    { env: { OPERON_ADMIN_PASSWORD: ADMIN.password }, api: true, startTimeoutMs: 180_000 },
  );
  try {
    const api = apiClient(server.apiUrl);
    await api.auth.session.query();
    await api.auth.signIn.mutate(ADMIN);
    await api.perf.updateSettings.mutate({ enabled: false });
    await api.operators.create.mutate({ name: "pipe", spec: PIPE });
    const measured = schedulerOn
      ? { first: await measure(api, "wait10"), second: await measure(api, "wait30") }
      : { first: null, second: null };
    let capacity = null;
    if (schedulerOn) {
      capacity = await api.scheduler.operatorCapacity.query({ name: "pipe" });
      await api.scheduler.setEnabled.mutate({ enabled: true });
    }
    // Warm-up: the workers' first requests.
    for (let i = 0; i < 20; i += 1)
      await (await fetch(`${server.httpUrl}/v2/models/pipe/infer`, { method: "POST", body: BODY })).arrayBuffer();
    const samples = [];
    const arrivals = [];
    const counts = [];
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
          fetch(`${server.httpUrl}/v2/models/pipe/infer`, { method: "POST", body: BODY })
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
    const readings = counts.filter((count) => count.instances !== null);
    const windows = [];
    for (let from = 0; from < totalSecs; from += WINDOW_SECS) {
      const inWindow = samples.filter((sample) => sample.sentAt >= from && sample.sentAt < from + WINDOW_SECS);
      const latencies = inWindow
        .filter((sample) => sample.ok)
        .map((sample) => sample.latencyMs)
        .sort((a, b) => a - b);
      const here = readings.filter((count) => count.at >= from && count.at < from + WINDOW_SECS);
      windows.push({
        from,
        offered: arrivals.filter((at) => at >= from && at < from + WINDOW_SECS).length / WINDOW_SECS,
        completedRps: latencies.length / WINDOW_SECS,
        p50: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        first: here.length ? Math.max(...here.map((count) => count.instances.first)) : null,
        second: here.length ? Math.max(...here.map((count) => count.instances.second)) : null,
      });
    }
    const stepLatencies = samples
      .filter((sample) => sample.sentAt >= BASE_SECS && sample.ok)
      .map((sample) => sample.latencyMs)
      .sort((a, b) => a - b);
    const before = readings[0]?.instances ?? { first: null, second: null };
    const grewAt = readings.find((count) => count.at >= BASE_SECS && count.instances.second > before.second)?.at;
    const recovered = windows.find((w) => w.from >= BASE_SECS && w.p99 !== null && w.p99 <= P99_BUDGET_MS);
    const lastStepWindow = windows.at(-1);
    const decisions = schedulerOn ? (await api.scheduler.decisions.query({ limit: 100 })).decisions : [];
    return {
      name,
      measured,
      capacity,
      windows,
      before,
      after: {
        first: Math.max(...readings.map((count) => count.instances.first)),
        second: Math.max(...readings.map((count) => count.instances.second)),
      },
      firstScaleSecs: grewAt === undefined ? null : grewAt - BASE_SECS,
      p99WithinBudgetFromSecs: recovered === undefined ? null : recovered.from - BASE_SECS,
      stepP50: quantile(stepLatencies, 0.5),
      stepP99: quantile(stepLatencies, 0.99),
      lastWindowRps: lastStepWindow?.completedRps ?? null,
      completed: samples.filter((sample) => sample.ok).length,
      errors: samples.filter((sample) => !sample.ok).length,
      shed,
      scaleUps: decisions
        .filter((decision) => decision.action === "SCALE_UP")
        .reverse()
        .map(
          (decision) =>
            `${decision.model} ${decision.fromCount}→${decision.toCount} (${decision.operator ?? "own demand"})`,
        ),
    };
  } finally {
    await server.stop();
  }
}

const fmt = (value, digits = 0) => (value === null || value === undefined ? "—" : Number(value).toFixed(digits));

function report(results, load) {
  const lines = [];
  lines.push("# Resource scheduler: an operator step in demand", "");
  lines.push(`Run ${new Date().toISOString()} (\`npm run bench:scheduler-operator\`).`);
  // Timers that wait without CPU still need the event loops of the gateway and the workers: a loaded host adds
  // its queueing to every figure, so the load is part of the result.
  lines.push(
    `Host: ${availableParallelism()} cores; 1-minute load average ${load.start.toFixed(1)} at the start, ${load.end.toFixed(1)} at the end.`,
  );
  lines.push(
    `Operator pipe: step first (wait10, 10 ms per execution) → step second (wait30, 30 ms: 3× slower), TypeScript timers, unbatched, one instance each. Load: open loop, ${BASE} operator req/s for ${BASE_SECS} s, then ${STEP} req/s for ${STEP_SECS} s (at most ${MAX_IN_FLIGHT} in flight; arrivals beyond are shed by the client). Scheduler: period 2 s, headroom 25 %, up to 8 instances per model, capacities from perf runs (concurrency 2) made before the load.`,
    "",
  );
  const measuredRun = results.find((r) => r.capacity !== null);
  if (measuredRun) {
    const c = measuredRun.capacity;
    lines.push(
      `Measured per instance: first ${fmt(c.steps[0].perInstanceRps, 1)} req/s, second ${fmt(c.steps[1].perInstanceRps, 1)} req/s; operator capacity ${fmt(c.capacityRps, 1)} req/s, bottleneck step ${c.bottleneckSteps.join(", ")}.`,
      "",
    );
  }
  lines.push(
    "| config | first (wait10) before → after | second (wait30) before → after | first scale-up after the step | p99 ≤ 100 ms again from | completed req/s, last window | step p50 | step p99 | completed | errors | shed |",
  );
  lines.push("|---|---|---|---|---|---|---|---|---|---|---|");
  for (const r of results)
    lines.push(
      `| ${r.name} | ${r.before.first} → ${r.after.first} | ${r.before.second} → ${r.after.second} | ${r.firstScaleSecs === null ? "—" : `${fmt(r.firstScaleSecs, 1)} s`} | ${r.p99WithinBudgetFromSecs === null ? "never" : `${r.p99WithinBudgetFromSecs} s`} | ${fmt(r.lastWindowRps)} | ${fmt(r.stepP50)} ms | ${fmt(r.stepP99)} ms | ${r.completed} | ${r.errors} | ${r.shed} |`,
    );
  for (const r of results) {
    if (r.scaleUps.length > 0) lines.push("", `${r.name}: scale-ups in order: ${r.scaleUps.join(", ")}.`);
    lines.push("", `## ${r.name}: per ${WINDOW_SECS} s window (by send time)`, "");
    lines.push("| from (s) | offered req/s | completed req/s | first instances | second instances | p50 ms | p99 ms |");
    lines.push("|---|---|---|---|---|---|---|");
    for (const w of r.windows)
      lines.push(
        `| ${w.from} | ${fmt(w.offered)} | ${fmt(w.completedRps)} | ${w.first ?? "—"} | ${w.second ?? "—"} | ${fmt(w.p50)} | ${fmt(w.p99)} |`,
      );
  }
  return `${lines.join("\n")}\n`;
}

const repository = writeRepository();
const loadAtStart = loadavg()[0];
const results = [];
results.push(await scenario("fixed (1 instance per step, scheduler off)", repository, false));
results.push(await scenario("operator-aware scheduler", repository, true));
const text = report(results, { start: loadAtStart, end: loadavg()[0] });
process.stdout.write(text);
if (process.env.OPERON_BENCH_NO_WRITE !== "1") {
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  writeFileSync(join(ROOT, "bench/results/scheduler-operator-step.md"), text);
}

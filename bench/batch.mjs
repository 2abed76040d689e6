#!/usr/bin/env node
// `npm run bench:batch`: a batch job of 20,000 rows through a small model
// while an online client runs at half the model's capacity, side by side
// with the same online load alone. Prints the online p99 with and without
// the job, the job's throughput and the capacity the online load leaves,
// and writes bench/results/batch.md. A few minutes. Needs the build.
// Not a test: the figures depend on the machine (and on what else runs on it).
//
// The model ("wait10") waits 10 ms per execution without using the CPU (an
// accelerator's stand-in), batches up to 4 requests, and has two priority
// levels (online traffic at the default level 1, the job at the lowest, 2).
//
// Phases, on one server: (1) capacity: closed-loop clients for CAPACITY_SECS;
// (2) online alone: open-loop online load at half the capacity for ONLINE_SECS;
// (3) the same online load while a job runs over ROWS rows (until it is done);
// (4) online alone again for ONLINE_SECS; (5) capacity again. The host's speed
// drifts while other work comes and goes, so the job's phase is judged
// against online alone on both sides of it (their latencies pooled), and
// each phase's p99 is also given per WINDOW_SECS window (median and range):
// the spread says how far one phase's p99 can be trusted. The capacity the
// online load leaves is the mean of both capacity phases, with the range.
// OPERON_BENCH_BATCH_ROWS_PER_REQUEST sets the job's rows per request
// (default: the server's, half the model's max_batch_size: 2).
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiSession } from "../apps/cli/dist/api-session.js";
import { ROOT, operonServeArgs } from "./lib/processes.mjs";

const ROWS = Number(process.env.OPERON_BENCH_BATCH_ROWS ?? 20_000);
const CAPACITY_SECS = Number(process.env.OPERON_BENCH_BATCH_CAPACITY_SECS ?? 8);
const ONLINE_SECS = Number(process.env.OPERON_BENCH_BATCH_ONLINE_SECS ?? 20);
const WINDOW_SECS = 5;
const ROWS_PER_REQUEST =
  process.env.OPERON_BENCH_BATCH_ROWS_PER_REQUEST !== undefined
    ? Number(process.env.OPERON_BENCH_BATCH_ROWS_PER_REQUEST)
    : undefined;
const CAPACITY_CLIENTS = 32;
const ADMIN = { email: "bench@example.com", password: "copper-meadow-violin-71" };

function writeRepository() {
  const root = mkdtempSync(join(tmpdir(), "operon-bench-batch-"));
  mkdirSync(join(root, "wait10", "1"), { recursive: true });
  writeFileSync(
    join(root, "wait10", "config.pbtxt"),
    `name: "wait10"
backend: "typescript"
max_batch_size: 4
input [ { name: "X", data_type: TYPE_FP32, dims: [ 2 ] } ]
output [ { name: "Y", data_type: TYPE_FP32, dims: [ 1 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
dynamic_batching { max_queue_delay_microseconds: 500 priority_levels: 2 default_priority_level: 1 }
`,
  );
  writeFileSync(
    join(root, "wait10", "1", "model.js"),
    `export default class {
  async execute(requests, ctx) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    return requests.map((request) => {
      const x = request.input("X").toFloat32Array();
      const rows = x.length / 2;
      const y = Array.from({ length: rows }, (_, i) => 2 * x[2 * i] + x[2 * i + 1]);
      return { outputs: [ctx.tensor.float32("Y", [rows, 1], y)] };
    });
  }
}
`,
  );
  return root;
}

async function startServer(repository) {
  const child = spawn(
    process.execPath,
    operonServeArgs(repository, ["--usage-sample-secs", "0", "--admin-email", ADMIN.email]),
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, OPERON_ADMIN_PASSWORD: ADMIN.password } },
  );
  let output = "";
  const seen = (pattern) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`operon serve did not print ${pattern}:\n${output.slice(-2000)}`)),
        180_000,
      );
      const check = () => {
        const match = pattern.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match);
        }
      };
      child.stdout.on("data", (chunk) => {
        output += chunk;
        check();
      });
      child.stderr.on("data", (chunk) => {
        output += chunk;
        check();
      });
      check();
    });
  const http = await seen(/HTTP on (http:\/\/[^\s,]+)/);
  const api = await seen(/Operon API on (\S+)\/api\/trpc/);
  return {
    httpUrl: http[1],
    apiUrl: api[1],
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", resolve);
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
      }),
  };
}

const BODY = JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [1, 2], data: [1, 2] }] });

async function infer(httpUrl) {
  const started = performance.now();
  const response = await fetch(`${httpUrl}/v2/models/wait10/infer`, { method: "POST", body: BODY });
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`online request answered ${response.status}`);
  return performance.now() - started;
}

async function capacity(httpUrl) {
  let done = 0;
  const deadline = performance.now() + CAPACITY_SECS * 1000;
  await Promise.all(
    Array.from({ length: CAPACITY_CLIENTS }, async () => {
      while (performance.now() < deadline) {
        await infer(httpUrl);
        done += 1;
      }
    }),
  );
  return done / CAPACITY_SECS;
}

/**
 * Open loop at `rps` until `until()` says stop (checked every arrival); latencies in ms, and per WINDOW_SECS
 * window of sending (by when each request was sent).
 */
async function online(httpUrl, rps, until) {
  const latencies = [];
  const windows = [];
  let failures = 0;
  const pending = new Set();
  const started = performance.now();
  const load = (await import("node:os")).loadavg()[0];
  for (let i = 0; ; i += 1) {
    const at = started + (i * 1000) / rps;
    const wait = at - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const elapsed = performance.now() - started;
    if (until(elapsed)) break;
    const window = Math.floor(elapsed / (WINDOW_SECS * 1000));
    const request = infer(httpUrl).then(
      (ms) => {
        latencies.push(ms);
        (windows[window] ??= []).push(ms);
      },
      () => (failures += 1),
    );
    pending.add(request);
    void request.finally(() => pending.delete(request));
  }
  await Promise.all(pending);
  // A last window shorter than half a window holds too few requests for a p99.
  const seconds = (performance.now() - started) / 1000;
  const whole = windows.filter((w, i) => w !== undefined && (i + 0.5) * WINDOW_SECS <= seconds);
  return { latencies, failures, seconds, windowP99s: whole.map((w) => percentile(w, 99)), load };
}

/** "median [min–max]" of a list of figures. */
function spread(values) {
  if (values.length === 0) return "-";
  const sorted = [...values].sort((a, b) => a - b);
  return `${percentile(sorted, 50).toFixed(1)} [${sorted[0].toFixed(1)}–${sorted.at(-1).toFixed(1)}]`;
}

const signed = (value) => `${value >= 0 ? "+" : ""}${value.toFixed(1)}`;

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

const loadAtStart = (await import("node:os")).loadavg();
const repository = writeRepository();
const server = await startServer(repository);
try {
  const session = await ApiSession.signIn(server.apiUrl, ADMIN.email, ADMIN.password);
  for (let i = 0; i < 50; i += 1) await infer(server.httpUrl);
  const capacityBefore = await capacity(server.httpUrl);
  const rate = capacityBefore / 2;
  console.log(
    `capacity ${capacityBefore.toFixed(0)} req/s (closed loop, ${CAPACITY_CLIENTS} clients); online load ${rate.toFixed(0)} req/s`,
  );
  const aloneBefore = await online(server.httpUrl, rate, (ms) => ms > ONLINE_SECS * 1000);
  const csv = ["id,a,b", ...Array.from({ length: ROWS }, (_, i) => `k${i},${i % 100},${i % 7}`)].join("\n");
  const dataset = await session.mutate("datasets.create", {
    name: `bench-${Date.now()}`,
    file: { kind: "upload", fileName: "rows.csv", contentBase64: Buffer.from(csv).toString("base64") },
    keyColumns: ["id"],
  });
  const job = await session.mutate("jobs.create", {
    datasetId: dataset.id,
    target: { kind: "MODEL", name: "wait10" },
    mapping: [{ input: "X", kind: "tensor", columns: ["a", "b"] }],
    ...(ROWS_PER_REQUEST !== undefined ? { rowsPerRequest: ROWS_PER_REQUEST } : {}),
  });
  let state = job;
  let control;
  let runningAt;
  let doneAt;
  const jobStarted = performance.now();
  /** The controller's windows as jobs.get showed them (a line each time one changed): where the job lost throughput. */
  const timeline = [];
  const concurrencies = [];
  const poll = (async () => {
    while (!["DONE", "FAILED", "CANCELLED"].includes(state.state)) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      state = await session.query("jobs.get", { id: job.id, cost: false });
      if (state.control) control = state.control;
      if (state.state === "RUNNING" && runningAt !== undefined) concurrencies.push(state.concurrency);
      const line = [
        state.concurrency,
        state.control?.reason ?? "-",
        state.control?.onlineP99Ms?.toFixed(1) ?? "-",
        state.control?.onlineBudgetMs?.toFixed(1) ?? "-",
        state.control?.baselineMs?.toFixed(1) ?? "-",
      ].join(",");
      if (timeline.at(-1)?.line !== line)
        timeline.push({ at: (performance.now() - jobStarted) / 1000, rows: state.doneRows, line });
      if (runningAt === undefined && state.doneRows > 0) runningAt = { at: performance.now(), rows: state.doneRows };
    }
    doneAt = performance.now();
  })();
  const withJob = await online(server.httpUrl, rate, () => doneAt !== undefined);
  await poll;
  if (state.state !== "DONE") throw new Error(`the job ended ${state.state}: ${state.error}`);
  const aloneAfter = await online(server.httpUrl, rate, (ms) => ms > ONLINE_SECS * 1000);
  const capacityAfter = await capacity(server.httpUrl);
  const capacityRps = (capacityBefore + capacityAfter) / 2;
  const jobSecs = (doneAt - runningAt.at) / 1000;
  const jobRps = (state.totalRows - runningAt.rows) / jobSecs;
  const leftRps = capacityRps - rate;
  const leftRange = [capacityBefore, capacityAfter].map((c) => c - rate);
  const pooled = {
    latencies: [...aloneBefore.latencies, ...aloneAfter.latencies],
    failures: aloneBefore.failures + aloneAfter.failures,
    seconds: aloneBefore.seconds + aloneAfter.seconds,
    windowP99s: [...aloneBefore.windowP99s, ...aloneAfter.windowP99s],
  };
  const rows = [
    ["online alone, before the job", aloneBefore],
    ["online with the job", withJob],
    ["online alone, after the job", aloneAfter],
    ["online alone, both (pooled)", pooled],
  ].map(([label, run]) => ({
    label,
    sent: run.latencies.length,
    failures: run.failures,
    rps: run.latencies.length / run.seconds,
    p50: percentile(run.latencies, 50),
    p99: percentile(run.latencies, 99),
    windows: run.windowP99s,
    load: run.load,
  }));
  const [before, during, after, alone] = rows;
  const rise = (base) => (during.p99 / base - 1) * 100;
  const median = (values) => percentile(values, 50);
  const windowRise = (median(during.windows) / median(alone.windows) - 1) * 100;
  const share = (left) => (100 * jobRps) / left;
  const lines = [
    "# Batch job in idle capacity (npm run bench:batch)",
    "",
    `Model wait10 (10 ms per execution, timer; max_batch_size 4; 1 instance; priority levels 2). ${ROWS} rows, ${state.rowsPerRequest ?? "2 (the server's default: half the model's max_batch_size)"} rows a request; capacity ${capacityBefore.toFixed(0)} req/s before and ${capacityAfter.toFixed(0)} after (closed loop); online load ${rate.toFixed(0)} req/s open loop.`,
    "",
    `| phase | online requests | failures | online req/s | p50 ms | p99 ms | p99 per ${WINDOW_SECS} s window, median [min–max] ms | load at start |`,
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...rows.map(
      (r) =>
        `| ${r.label} | ${r.sent} | ${r.failures} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${spread(r.windows)} | ${r.load?.toFixed(1) ?? "-"} |`,
    ),
    "",
    `Online p99 with the job: ${signed(rise(alone.p99))} % against online alone before and after pooled (${signed(rise(before.p99))} % against before alone, ${signed(rise(after.p99))} % against after alone); the median window p99 ${signed(windowRise)} %. Goal: at most +10 %.`,
    `Online alone moved from ${before.p99.toFixed(1)} to ${after.p99.toFixed(1)} ms p99 across the job (${signed((after.p99 / before.p99 - 1) * 100)} %): the host's drift over the run.`,
    `Job: ${state.totalRows} rows, ${state.failedRows} failed, ${jobRps.toFixed(0)} rows/s over ${jobSecs.toFixed(1)} s; capacity left by the online load ${leftRps.toFixed(0)} req/s (${leftRange.map((c) => c.toFixed(0)).join(" before, ")} after): ${share(leftRps).toFixed(0)} % of it (${share(leftRange[0]).toFixed(0)}–${share(leftRange[1]).toFixed(0)} % against each capacity phase; goal: at least 80 %). Concurrency while running: ${spread(concurrencies)}; last ${state.concurrency}.`,
    control !== undefined
      ? `The job's last window: ${control.reason}, online p99 ${control.onlineP99Ms?.toFixed(1) ?? "-"} ms against a budget of ${control.onlineBudgetMs.toFixed(1)} ms (baseline without the job ${control.baselineMs?.toFixed(1) ?? "-"} ms).`
      : "The job reported no concurrency window.",
    "",
    `Load average at the start: ${loadAtStart.map((n) => n.toFixed(1)).join(" ")}; at the end: ${(
      await import("node:os")
    )
      .loadavg()
      .map((n) => n.toFixed(1))
      .join(" ")} (2 cores; other work shares the host).`,
  ];
  console.log(lines.join("\n"));
  if (process.env.OPERON_BENCH_BATCH_TIMELINE) {
    writeFileSync(
      process.env.OPERON_BENCH_BATCH_TIMELINE,
      `${["seconds,done_rows,concurrency,reason,online_p99_ms,online_budget_ms,baseline_ms", ...timeline.map((t) => `${t.at.toFixed(1)},${t.rows},${t.line}`)].join("\n")}\n`,
    );
    const reasons = {};
    for (const t of timeline) {
      const reason = t.line.split(",")[1];
      reasons[reason] = (reasons[reason] ?? 0) + 1;
    }
    console.log(`controller windows seen, by reason: ${JSON.stringify(reasons)}`);
  }
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  writeFileSync(join(ROOT, "bench/results/batch.md"), `${lines.join("\n")}\n`);
} finally {
  await server.stop();
}

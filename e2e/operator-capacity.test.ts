import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiSession } from "./support/api-client.js";
import { apiErrorOf } from "./support/api-client.js";
import { signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import { tempRepository, type RunningOperon } from "./support/operon-process.js";

/**
 * Operators as the unit of capacity (issue 25) through the real server: an
 * operator `pipe` = step `first` (model `fast`, a 12 ms timer) then step
 * `second` (model `slow`, 36 ms: 3× slower), one instance each, no batching.
 * Real perf runs measure both models (the per-instance capacities); the
 * operator's capacity is then its second step's and that step is the
 * bottleneck. An open-loop client sends the operator more than that step
 * carries (but well within the first step's capacity): the scheduler grows
 * `second` (the decision names the operator) until the operator completes
 * what is sent, and never scales `first`.
 */
const timerModel = (ms: number): string => `export default class {
  async execute(requests) {
    await new Promise((resolve) => setTimeout(resolve, ${ms}));
    return requests.map((request) => ({ outputs: [request.input("IN").rename("OUT")] }));
  }
}`;
const configOf = (name: string): string => `name: "${name}"
backend: "typescript"
max_batch_size: 0
input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]
output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]
instance_group [ { count: 1 } ]`;

const PIPE = {
  inputs: [{ name: "IN", datatype: "FP32", dims: [1] }],
  outputs: [{ name: "OUT", datatype: "FP32", dims: [1] }],
  steps: [
    { id: "first", kind: "model", model: "fast", inputs: { IN: "IN" }, outputs: { OUT: "mid" } },
    { id: "second", kind: "model", model: "slow", inputs: { IN: "mid" }, outputs: { OUT: "OUT" } },
  ],
};
const BODY = JSON.stringify({ inputs: [{ name: "IN", datatype: "FP32", shape: [1], data: [1] }] });

async function instancesOf(server: RunningOperon, model: string): Promise<number> {
  const body = (await (await fetch(`${server.httpUrl}/v2/operon/workers`)).json()) as {
    workers: Array<{ model: string; state: string }>;
  };
  return body.workers.filter((worker) => worker.model === model && worker.state === "READY").length;
}

async function measured(admin: ApiSession, model: string): Promise<void> {
  const { id } = await admin.client.perf.start.mutate({
    target: { kind: "MODEL", name: model },
    // Two at once on one instance: the HTTP round trip overlaps the compute, so the figure is the instance's.
    concurrency: { start: 2, end: 2, step: 1 },
    measurementIntervalMs: 500,
    maxTrials: 3,
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const report = await admin.client.perf.get.query({ id });
    if (report.status !== "RUNNING" && report.status !== "QUEUED") {
      expect(report.status, report.error ?? "").toBe("SUCCEEDED");
      return;
    }
    if (Date.now() > deadline) throw new Error(`perf run of ${model} still ${report.status} after 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Open loop: `rps` operator requests per second in ticks of 50 ms, whatever the answers (lost ticks are not caught
 * up, so a stalled event loop never sends a burst above the rate). Counts completions per second.
 */
function openLoop(
  server: RunningOperon,
  rps: number,
): {
  completedInLast: (ms: number) => number;
  failures: string[];
  stop: () => Promise<void>;
} {
  const done: number[] = [];
  const failures: string[] = [];
  const pending = new Set<Promise<void>>();
  let owed = 0;
  const tick = setInterval(() => {
    owed += rps / 20;
    for (; owed >= 1; owed -= 1) {
      const request = fetch(`${server.httpUrl}/v2/models/pipe/infer`, { method: "POST", body: BODY }).then(
        async (response) => {
          const text = await response.text();
          if (response.status === 200) done.push(Date.now());
          else failures.push(`${response.status} ${text}`);
        },
        (error: unknown) => {
          failures.push(String(error));
        },
      );
      pending.add(request);
      void request.finally(() => pending.delete(request));
    }
  }, 50);
  return {
    completedInLast: (ms) => done.filter((at) => at >= Date.now() - ms).length,
    failures,
    stop: async () => {
      clearInterval(tick);
      await Promise.all(pending);
    },
  };
}

describe("operators as the unit of capacity (real server)", () => {
  let server: RunningOperon;
  let admin: ApiSession;

  beforeAll(async () => {
    const repository = tempRepository();
    for (const [name, ms] of [
      ["fast", 12],
      ["slow", 36],
    ] as const) {
      mkdirSync(join(repository, name, "1"), { recursive: true });
      writeFileSync(join(repository, name, "1", "model.js"), timerModel(ms));
      writeFileSync(join(repository, name, "config.pbtxt"), configOf(name));
    }
    server = await startControlPlaneServer([
      "--model-repository",
      repository,
      "--load-model",
      "fast",
      "--load-model",
      "slow",
      // Off until the perf runs are done (their traffic is not the operator's demand); the test switches it on.
      "--resource-scheduler=false",
      "--scheduler-period-secs",
      "1",
      "--scheduler-cooldown-secs",
      "60",
      "--scheduler-cpu-slots",
      "16",
      "--max-instances-per-model",
      "4",
      // The shared CI host's p99 under load says little of these timers: every measured step counts.
      "--scheduler-p99-budget-ms",
      "10000",
    ]);
    admin = await signedIn(server);
    // Automatic perf runs would measure the new operator under the test's load.
    await admin.client.perf.updateSettings.mutate({ enabled: false });
    await admin.client.operators.create.mutate({ name: "pipe", spec: PIPE });
    await measured(admin, "fast");
    await measured(admin, "slow");
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("computes the operator's capacity from its steps' perf reports; the 3× slower step is the bottleneck", async () => {
    const capacity = await admin.client.scheduler.operatorCapacity.query({ name: "pipe" });
    expect(capacity.bottleneckSteps).toEqual(["second"]);
    const [first, second] = capacity.steps;
    expect(first).toMatchObject({ step: "first", model: "fast", callsPerRequest: 1, instances: 1 });
    expect(second).toMatchObject({ step: "second", model: "slow", callsPerRequest: 1, instances: 1, bottleneck: true });
    expect(first!.capacitySource).toBe("report");
    expect(second!.capacitySource).toBe("report");
    expect(capacity.capacityRps).toBe(second!.capacityRps);
    // 12 ms vs 36 ms of compute; what a loaded host adds to each request narrows the measured ratio.
    expect(first!.capacityRps / second!.capacityRps).toBeGreaterThan(1.7);
    expect(capacity.p99BudgetMs).toBe(10_000);
    console.info(
      `operator pipe: first ${first!.capacityRps.toFixed(1)} req/s, second ${second!.capacityRps.toFixed(1)} req/s per instance`,
    );

    const missing = await apiErrorOf(admin.client.scheduler.operatorCapacity.query({ name: "nope" }));
    expect(missing.appCode).toBe("NOT_FOUND");
    expect(missing.message).toMatch(/no operator 'nope'/);
    const bad = await apiErrorOf(admin.client.scheduler.operatorCapacity.query({ name: "../x" }));
    expect(bad.appCode).toBe("VALIDATION_FAILED");
  });

  it("scales the bottleneck step until the operator carries its demand, without scaling the first step", async () => {
    const before = await admin.client.scheduler.operatorCapacity.query({ name: "pipe" });
    const [first, second] = before.steps;
    // More than the second step carries, and with the headroom still within the first step's one instance.
    const rps = Math.min(1.6 * second!.capacityRps, first!.capacityRps / 1.35);
    expect(rps).toBeGreaterThan(1.2 * second!.capacityRps);
    await admin.client.scheduler.setEnabled.mutate({ enabled: true });
    const load = openLoop(server, rps);
    const firstCounts = new Set<number>();
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        firstCounts.add(await instancesOf(server, "fast"));
        const slow = await instancesOf(server, "slow");
        // Reached: the operator completes what is sent (90 %, over 2 s) on the grown second step.
        if (slow >= 2 && load.completedInLast(2000) >= 0.9 * 2 * rps) break;
        if (Date.now() > deadline)
          throw new Error(
            `after 30 s: slow has ${slow} instances, ${load.completedInLast(2000) / 2} of ${rps.toFixed(1)} req/s completed`,
          );
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } finally {
      await load.stop();
    }
    expect(load.failures).toEqual([]);
    expect([...firstCounts]).toEqual([1]);
    expect(await instancesOf(server, "fast")).toBe(1);

    const slowDecisions = (await admin.client.scheduler.decisions.query({ model: "slow" })).decisions;
    // Under a slow host the demand may take the step past 2 instances: the first growth (from 1) is the one to check,
    // and every growth of the step is the operator's.
    const ups = slowDecisions.filter((decision) => decision.action === "SCALE_UP");
    expect(ups.every((decision) => decision.operator === "pipe")).toBe(true);
    const up = ups.find((decision) => decision.fromCount === 1);
    expect(up).toBeDefined();
    expect(up).toMatchObject({ operator: "pipe", fromCount: 1, applied: true, capacitySource: "report" });
    expect(up!.reason).toMatch(/operator 'pipe' \(step 'second', its bottleneck\)/);
    const fastDecisions = (await admin.client.scheduler.decisions.query({ model: "fast" })).decisions;
    expect(fastDecisions.filter((decision) => decision.action === "SCALE_UP")).toEqual([]);
    // The operator's decisions, by operator.
    const byOperator = (await admin.client.scheduler.decisions.query({ operator: "pipe" })).decisions;
    expect(byOperator.map((decision) => decision.model)).toContain("slow");
    expect(byOperator.every((decision) => decision.operator === "pipe")).toBe(true);

    // The scheduler's view: the operator's capacity grew with its bottleneck, and its demand was measured. The view
    // is what a period saw before it applied its decisions: the scale-up shows from the next period (1 s) on.
    const viewDeadline = Date.now() + 10_000;
    let pipe = (await admin.client.scheduler.status.query()).operators.find(
      (operator) => operator.operator === "pipe",
    )!;
    while (pipe.steps.find((step) => step.step === "second")!.instances < 2 && Date.now() < viewDeadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      pipe = (await admin.client.scheduler.status.query()).operators.find((operator) => operator.operator === "pipe")!;
    }
    expect(pipe.steps.find((step) => step.step === "second")!.instances).toBeGreaterThanOrEqual(2);
    expect(pipe.demandRps).not.toBeNull();
    const after = await admin.client.scheduler.operatorCapacity.query({ name: "pipe" });
    expect(after.capacityRps!).toBeGreaterThan(before.capacityRps!);
  }, 60_000);
});

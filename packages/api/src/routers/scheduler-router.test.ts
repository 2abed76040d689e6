import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import type { ModelStatistics } from "@operon/protocol/inference";
import { SILENT_LOGGER } from "../options.js";
import type { GatewayClient } from "../services/gateway/gateway-client.js";
import { ResourceScheduler, RESOURCE_SCHEDULER_DEFAULTS } from "../services/resource-scheduler/resource-scheduler.js";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";

/** A gateway as the scheduler sees it: request counters, instances, parked models; records what it is asked to do. */
class FakeGateway {
  requests = new Map<string, number>();
  instances = new Map<string, number>([
    ["busy", 1],
    ["quiet", 1],
  ]);
  parked: string[] = [];
  refuse: string | undefined;
  calls: string[] = [];

  async statistics(): Promise<ModelStatistics[]> {
    return [...this.instances.keys()].map((name) => {
      const count = this.requests.get(name) ?? 0;
      return {
        name,
        version: "1",
        last_inference: count > 0 ? 1 : 0,
        inference_stats: { success: { count }, fail: { count: 0 }, queue: { count, ns: 0 } },
      } as unknown as ModelStatistics;
    });
  }
  async workers() {
    const workers = [...this.instances].flatMap(([model, count]) =>
      Array.from({ length: count }, (_, i) => ({
        model,
        version: "1",
        instance: `${model}_0_${i}`,
        kind: "CPU",
        rssBytes: null,
        state: "READY",
      })),
    );
    return { workers, hostCpuCores: 2, gateway: { pid: 1, cpuSeconds: 0, rssBytes: 0 }, gpus: [] };
  }
  async scalingState() {
    return {
      models: [...this.instances].map(([model, instances]) => ({
        model,
        instances,
        configuredInstances: 1,
        queued: 0,
      })),
      parked: this.parked,
      operators: [],
    };
  }
  async listOperators() {
    return [];
  }
  async scaleModel(name: string, count: number) {
    this.calls.push(`scale ${name} ${count}`);
    if (this.refuse !== undefined) throw new Error(this.refuse);
    const from = this.instances.get(name)!;
    this.instances.set(name, count);
    return { model: name, from, to: count };
  }
  async parkModel(name: string) {
    this.calls.push(`park ${name}`);
  }
}

describe.each(testDatabaseBackends({ migrated: true }))("scheduler router and runner on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;
  let gateway: FakeGateway;
  let scheduler: ResourceScheduler;
  let now = 1_000_000;

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(db);
    gateway = new FakeGateway();
    scheduler = new ResourceScheduler(
      db.prisma,
      gateway as unknown as GatewayClient,
      { ...RESOURCE_SCHEDULER_DEFAULTS, periodSecs: 0, defaultCapacityRps: 10, maxInstancesPerModel: 4, cpuSlots: 16 },
      SILENT_LOGGER,
      () => now,
    );
    // The router works on the control plane's scheduler: give it this one (same database).
    h.controlPlane.services.resourceScheduler = scheduler;
  });
  afterAll(async () => {
    await h?.close();
    await db?.close();
    await backend.teardown();
  });

  it("records each decision with its inputs and reason, in the audit log too; viewers read, only admins change", async () => {
    expect(await scheduler.runOnce()).toEqual([]); // the baseline
    now += 10_000;
    gateway.requests.set("busy", 300); // 30 req/s over 10 s: 30 × 1.25 / 10 -> 4
    const decisions = await scheduler.runOnce();
    expect(decisions).toMatchObject([{ model: "busy", action: "SCALE_UP", from: 1, to: 4 }]);
    expect(gateway.calls).toEqual(["scale busy 4"]);

    const page = await h.as("VIEWER").scheduler.decisions({});
    expect(page.decisions).toMatchObject([
      {
        model: "busy",
        action: "SCALE_UP",
        fromCount: 1,
        toCount: 4,
        demandRps: 30,
        capacityRps: 10,
        capacitySource: "default",
        applied: true,
      },
    ]);
    expect(page.decisions[0]!.reason).toContain("demand 30.0 req/s");
    const audit = await h.as("ADMIN").audit.list({ action: "scheduler." });
    expect(audit.events.map((event) => event.action)).toContain("scheduler.scaleUp");
    expect((await h.as("VIEWER").scheduler.decisions({ model: "quiet" })).decisions).toEqual([]);
    const status = await h.as("ENGINEER").scheduler.status();
    expect(status.models.find((model) => model.model === "busy")).toMatchObject({ instances: 1, demandRps: 30 });

    expect(await appCodeOf(h.as("ENGINEER").scheduler.pin({ model: "busy", count: 2 }))).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as("VIEWER").scheduler.setEnabled({ enabled: false }))).toBe("FORBIDDEN");
    // Input checks (zod: BAD_REQUEST), then the service's own (the count against --max-instances-per-model).
    expect(await appCodeOf(h.as("ADMIN").scheduler.pin({ model: "../etc", count: 2 }))).toBe("TRPC:BAD_REQUEST");
    expect(await appCodeOf(h.as("ADMIN").scheduler.pin({ model: "busy", count: 0 }))).toBe("TRPC:BAD_REQUEST");
    expect(await appCodeOf(h.as("ADMIN").scheduler.pin({ model: "busy", count: 5 }))).toBe("VALIDATION_FAILED"); // over --max-instances-per-model 4
    expect(await appCodeOf(h.as("ADMIN").scheduler.decisions({ before: "x" }))).toBe("TRPC:BAD_REQUEST");
    expect(await appCodeOf(h.as("ADMIN").scheduler.unpin({ model: "quiet" }))).toBe("NOT_FOUND");
  });

  it("applies a pin at once, and records refusals by the gateway once, as applied = false", async () => {
    await h.as("ADMIN").scheduler.pin({ model: "quiet", count: 3 });
    now += 1_000;
    gateway.refuse =
      "model 'quiet': 3 instances asked; this server allows at most 2 per model (--max-instances-per-model)";
    const [decision] = await scheduler.runOnce();
    expect(decision).toMatchObject({ model: "quiet", action: "SCALE_UP", to: 3 });
    const [stored] = (await h.as("VIEWER").scheduler.decisions({ model: "quiet" })).decisions;
    expect(stored).toMatchObject({ applied: false, error: gateway.refuse });
    expect(stored!.reason).toContain("pinned to 3 by an admin; the gateway refused");
    // Refused: left alone for ten minutes (no call each period).
    now += 1_000;
    gateway.calls = [];
    await scheduler.runOnce();
    expect(gateway.calls).toEqual([]);
    gateway.refuse = undefined;
    await h.as("ADMIN").scheduler.unpin({ model: "quiet" });
    const pinAudit = await h.as("ADMIN").audit.list({ action: "scheduler.pin" });
    expect(pinAudit.events[0]).toMatchObject({ targetType: "model", targetId: "quiet", after: { count: 3 } });
  });

  it("off: no decisions whatever the demand; the switch is stored and audited", async () => {
    await h.as("ADMIN").scheduler.setEnabled({ enabled: false });
    expect((await h.as("VIEWER").scheduler.status()).enabled).toBe(false);
    now += 10_000;
    gateway.requests.set("busy", 100_000);
    gateway.calls = [];
    expect(await scheduler.runOnce()).toEqual([]);
    expect(gateway.calls).toEqual([]);
    const audit = await h.as("ADMIN").audit.list({ action: "scheduler.disable" });
    expect(audit.events).toHaveLength(1);
    await h.as("ADMIN").scheduler.setEnabled({ enabled: true });
  });

  it("leaves a model alone while a perf run measures it", async () => {
    const run = await db.prisma.perfReport.create({ data: { targetName: "busy", status: "RUNNING" } });
    gateway.instances.set("busy", 1);
    now += 10_000;
    gateway.requests.set("busy", (gateway.requests.get("busy") ?? 0) + 1000);
    gateway.calls = [];
    expect(await scheduler.runOnce()).toEqual([]);
    expect(gateway.calls).toEqual([]);
    await db.prisma.perfReport.delete({ where: { id: run.id } });
  });

  it("says why a capacity is the default: no perf report, or no step of the latest within the p99 budget", async () => {
    gateway.instances.set("busy", 1);
    now += 10_000;
    await scheduler.runOnce();
    expect((await h.as("VIEWER").scheduler.status()).models.find((model) => model.model === "busy")).toMatchObject({
      capacitySource: "default",
      defaultReason: "no-report",
    });
    // Two steps, both over the 100 ms budget: the report exists, and gives no capacity (issue 27, item 7).
    const report = await db.prisma.perfReport.create({
      data: {
        targetName: "busy",
        status: "SUCCEEDED",
        samples: {
          create: [
            { concurrency: 1, throughput: 50, latencyP99Us: 150_000 },
            { concurrency: 2, throughput: 60, latencyP99Us: 250_000 },
          ],
        },
      },
    });
    now += 10_000;
    await scheduler.runOnce();
    expect((await h.as("VIEWER").scheduler.status()).models.find((model) => model.model === "busy")).toMatchObject({
      capacitySource: "default",
      defaultReason: "over-budget",
      p99BudgetMs: 100,
    });
    await db.prisma.perfReport.delete({ where: { id: report.id } });
  });

  it("takes the capacity per instance an imported report measured; a summary Operon did not store is an error naming the row", async () => {
    gateway.instances.set("busy", 1);
    const summary = {
      version: "1",
      protocol: "http",
      maxBatchSize: 0,
      inputs: [],
      startedAt: "2026-01-01T00:00:00.000Z",
      finishedAt: "2026-01-01T00:00:00.000Z",
      totalRequests: 0,
      totalErrors: 0,
      imported: { fileName: "perf.csv", instanceCount: 2 },
      best: { concurrency: 1, throughput: 80, latencyP99Us: 50_000 },
      errorSamples: [],
      steps: [],
    };
    const report = await db.prisma.perfReport.create({
      data: {
        targetName: "busy",
        status: "SUCCEEDED",
        summary,
        samples: { create: [{ concurrency: 1, throughput: 80, latencyP99Us: 50_000 }] },
      },
    });
    now += 10_000;
    await scheduler.runOnce();
    expect((await h.as("VIEWER").scheduler.status()).models.find((model) => model.model === "busy")).toMatchObject({
      capacitySource: "report",
      capacityRps: 40,
    });
    // Not cast and read as one instance: the run fails, saying which row holds what.
    await db.prisma.perfReport.update({ where: { id: report.id }, data: { summary: { instanceCount: 2 } } });
    now += 10_000;
    await expect(scheduler.runOnce()).rejects.toThrow(`PerfReport.summary of row ${report.id} does not hold`);
    await db.prisma.perfReport.delete({ where: { id: report.id } });
  });

  it("records a parked model loaded again by a request as LOAD", async () => {
    gateway.parked = ["quiet"];
    gateway.instances.delete("quiet");
    now += 1_000;
    await scheduler.runOnce();
    gateway.parked = [];
    gateway.instances.set("quiet", 1);
    now += 1_000;
    await scheduler.runOnce();
    const [load] = (await h.as("VIEWER").scheduler.decisions({ model: "quiet" })).decisions;
    expect(load).toMatchObject({ action: "LOAD", fromCount: 0, toCount: 1 });
  });

  it("reads every gateway of the cluster: instance counts from the busiest gateway, gateway replicas from the sum, kept across a restart", async () => {
    // Two registered gateways beside the control plane's own (which gets no traffic here, as in Kubernetes).
    const own = new FakeGateway();
    const a = new FakeGateway();
    const b = new FakeGateway();
    // A model of its own: the earlier tests left perf reports and pins on busy and quiet.
    for (const gateway of [own, a, b]) gateway.instances = new Map([["spread", 1]]);
    // The earlier tests' periods decided a count already: start from none.
    await db.prisma.gatewayReplicas.deleteMany();
    let clock = 5_000_000;
    const replicas: number[] = [];
    const cluster = new ResourceScheduler(
      db.prisma,
      own as unknown as GatewayClient,
      { ...RESOURCE_SCHEDULER_DEFAULTS, periodSecs: 0, defaultCapacityRps: 10, maxInstancesPerModel: 4, cpuSlots: 16 },
      SILENT_LOGGER,
      () => clock,
      async () => [
        { gatewayHost: "a:8000", client: a as unknown as GatewayClient },
        { gatewayHost: "b:8000", client: b as unknown as GatewayClient },
      ],
    );
    cluster.onDesiredReplicas((count) => replicas.push(count));
    h.controlPlane.services.resourceScheduler = cluster;
    try {
      await cluster.runOnce(); // the baselines
      clock += 10_000;
      a.requests.set("spread", 200); // 20 req/s on each gateway
      b.requests.set("spread", 200);
      const decisions = await cluster.runOnce();
      // Per gateway: ceil(20 × 1.25 / 10) = 3 instances (the sum, 40 req/s, would ask each gateway for 5, capped at 4).
      expect(decisions).toMatchObject([{ model: "spread", action: "SCALE_UP", from: 1, to: 3, demandRps: 20 }]);
      // Applied on the control plane's gateway, then each registered gateway is set to the same per-gateway count.
      expect([own.calls, a.calls, b.calls]).toEqual([["scale spread 3"], ["scale spread 3"], ["scale spread 3"]]);
      // The cluster: 40 req/s need 5 instances, a gateway runs at most 4 of one model: 2 gateways.
      const status = await h.as("VIEWER").scheduler.status();
      expect(status.cluster).toEqual({
        gateways: [
          { gatewayHost: null, requestsPerSecond: 0, queueTimeMs: null, busyCores: null },
          { gatewayHost: "a:8000", requestsPerSecond: 20, queueTimeMs: 0, busyCores: null },
          { gatewayHost: "b:8000", requestsPerSecond: 20, queueTimeMs: 0, busyCores: null },
        ],
        summed: { requestsPerSecond: 40, queueTimeMs: 0, busyCores: null },
      });
      expect(status.replicas).toMatchObject({ desired: 2, minGateways: 1, maxGateways: 10 });
      expect(status.replicas!.reason).toMatch(/^2 gateways: spread needs 5 instances for 40\.0 req\/s/);
      expect(replicas.at(-1)).toBe(2);
      const audit = await h.as("ADMIN").audit.list({ action: "scheduler.replicas" });
      expect(audit.events[0]).toMatchObject({ action: "scheduler.replicas", after: { replicas: 2 } });

      // A restarted control plane exports the stored count at once, before its first decision.
      const restarted = new ResourceScheduler(
        db.prisma,
        own as unknown as GatewayClient,
        { ...RESOURCE_SCHEDULER_DEFAULTS, periodSecs: 0 },
        SILENT_LOGGER,
      );
      const published = new Promise<number>((resolvePublished) => restarted.onDesiredReplicas(resolvePublished));
      restarted.start();
      expect(await published).toBe(2);
      await restarted.stop();
    } finally {
      h.controlPlane.services.resourceScheduler = scheduler;
      await cluster.stop();
    }
  });
});

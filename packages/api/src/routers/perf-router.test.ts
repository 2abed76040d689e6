import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { ApiKeyRing } from "@operon/gateway/auth/api-key-ring";
import { generateApiKey } from "@operon/protocol/api-keys";
import { ControlPlane } from "../control-plane.js";
import { GatewayClient } from "../services/gateway/gateway-client.js";
import type { PerfProgressView } from "../services/perf/perf-runs.js";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { startTestGateway, type TestGateway } from "../testing/gateway-harness.js";

const EXAMPLES = fileURLToPath(new URL("../../../../examples/model_repository", import.meta.url));

// Every request to this gateway needs a key: the runs pass only if the control plane's key travels with perf's requests.
const adminKey = generateApiKey();
const ring = new ApiKeyRing();
ring.replaceAll([
  {
    id: "control-plane",
    hash: adminKey.hash,
    scopes: ["admin", "infer"],
    priorityLevel: 0,
    qpsQuota: null,
    expiresAt: null,
  },
]);

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startTestGateway({
    modelRepositories: [EXAMPLES],
    loadModels: ["add_sub"],
    access: { ring, requireApiKey: true },
  });
});
afterAll(async () => {
  await gateway?.stop();
});

const quick = { batchSize: 1, measurementIntervalMs: 150, maxTrials: 3 };

describe.each(testDatabaseBackends({ migrated: true }))("perf router on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(db, {
      gateway: { httpUrl: gateway.httpUrl, metricsUrl: gateway.metricsUrl, adminKey: adminKey.key },
    });
  });
  afterAll(async () => {
    await h?.close();
    await db?.close();
    await backend.teardown();
  });

  it("refuses runs viewers start, on unknown models, of the wrong kind or too large a batch, storing nothing", async () => {
    const target = { kind: "MODEL" as const, name: "add_sub" };
    const concurrency = { start: 1, end: 1, step: 1 };
    expect(await appCodeOf(h.as("VIEWER").perf.start({ target, concurrency, ...quick }))).toBe("FORBIDDEN");
    const unknown = h
      .as("ENGINEER")
      .perf.start({ target: { kind: "MODEL", name: "no_such_model" }, concurrency, ...quick });
    await expect(unknown).rejects.toThrow(/model 'no_such_model' is not served by the gateway/);
    expect(
      await appCodeOf(
        h.as("ENGINEER").perf.start({ target: { kind: "OPERATOR", name: "add_sub" }, concurrency, ...quick }),
      ),
    ).toBe("VALIDATION_FAILED");
    await expect(h.as("ENGINEER").perf.start({ target, concurrency, ...quick, batchSize: 9 })).rejects.toThrow(
      /above model 'add_sub'.*max_batch_size \(8\)/,
    );
    await expect(
      h.as("ENGINEER").perf.start({ target, concurrency: { start: 3, end: 1, step: 1 }, ...quick }),
    ).rejects.toThrow(/end must be at least start/);
    expect(await db.prisma.perfReport.count()).toBe(0);
    // The gateway does refuse callers without the key.
    await expect(new GatewayClient({ httpUrl: gateway.httpUrl }).statistics("add_sub")).rejects.toMatchObject({
      code: "GATEWAY_ERROR",
    });
  });

  it("measures concurrency 1..2 in the background, one run at a time, and stores one sample per step", async () => {
    const engineer = h.as("ENGINEER");
    const { id, status } = await engineer.perf.start({
      target: { kind: "MODEL", name: "add_sub" },
      concurrency: { start: 1, end: 2, step: 1 },
      ...quick,
    });
    expect(status).toBe("QUEUED");
    // A second run while the first goes is queued behind it, not refused.
    const second = await engineer.perf.start({
      target: { kind: "MODEL", name: "add_sub" },
      concurrency: { start: 1, end: 1, step: 1 },
      ...quick,
    });
    expect(second).toMatchObject({ status: "QUEUED", joined: false });
    let running = await h.as("VIEWER").perf.progress({ id });
    for (let i = 0; i < 100 && running.status === "QUEUED"; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      running = await h.as("VIEWER").perf.progress({ id });
    }
    expect(running).toMatchObject({ status: "RUNNING", totalSteps: 2, error: null });
    expect(running.percent).toBeLessThan(100);
    expect(await h.as("VIEWER").perf.progress({ id: second.id })).toMatchObject({
      status: "QUEUED",
      queuePosition: 1,
      percent: 0,
    });

    await h.controlPlane.services.perfRuns.settled(id);
    expect(await h.as("VIEWER").perf.progress({ id })).toEqual<PerfProgressView>({
      id,
      status: "SUCCEEDED",
      completedSteps: 2,
      totalSteps: 2,
      currentConcurrency: null,
      percent: 100,
      error: null,
      queuePosition: null,
      waitingFor: null,
    });
    const report = await h.as("VIEWER").perf.get({ id });
    expect(report).toMatchObject({
      targetKind: "MODEL",
      targetName: "add_sub",
      targetVersion: "1",
      status: "SUCCEEDED",
      createdBy: { email: "engineer@example.com" },
    });
    expect(report.samples.map((sample) => sample.concurrency)).toEqual([1, 2]);
    for (const sample of report.samples) {
      expect(sample.throughput).toBeGreaterThan(0);
      expect(sample.errorCount).toBe(0);
      expect(sample.latencyP50Us!).toBeGreaterThan(0);
      expect(sample.latencyP50Us!).toBeLessThanOrEqual(sample.latencyP99Us!);
      expect(sample.latencyP90Us!).toBeLessThanOrEqual(sample.latencyP95Us!);
      expect(sample.queueUs).not.toBeNull();
      expect(sample.computeUs!).toBeGreaterThan(0);
    }
    const summary = report.summary!;
    expect(summary.steps.map((step) => step.concurrency)).toEqual([1, 2]);
    expect(summary.totalErrors).toBe(0);
    expect(summary.best!.throughput).toBe(Math.max(...report.samples.map((sample) => sample.throughput)));
    expect(summary.inputs.map((input) => input.name)).toEqual(["INPUT0", "INPUT1"]);
    expect(report.config).toMatchObject({
      protocol: "http",
      concurrencyRange: { start: 1, end: 2, step: 1 },
      totalSteps: 2,
    });
    // The gateway counted the requests perf reported (plus its one warm-up request).
    const client = new GatewayClient({ httpUrl: gateway.httpUrl, adminKey: adminKey.key });
    const stats = await client.statistics("add_sub", { raw: true });
    expect(stats[0]!.inference_stats.success.count).toBeGreaterThanOrEqual(summary.totalRequests + 1);
    // All of it tagged as perf traffic (the control plane's key may tag): users' statistics leave it out (issue 27 item 8).
    expect(stats[0]!.operon_perf_traffic!.success_count).toBe(stats[0]!.inference_stats.success.count);
    expect((await client.statistics("add_sub"))[0]!.inference_stats.success.count).toBe(0);

    await h.controlPlane.services.perfRuns.settled(second.id);
    expect(await h.as("VIEWER").perf.progress({ id: second.id })).toMatchObject({
      status: "SUCCEEDED",
      completedSteps: 1,
    });
    const [first, next] = await Promise.all([
      db.prisma.perfReport.findUniqueOrThrow({ where: { id } }),
      db.prisma.perfReport.findUniqueOrThrow({ where: { id: second.id } }),
    ]);
    expect(next.startedAt!.getTime()).toBeGreaterThanOrEqual(first.finishedAt!.getTime());
    await engineer.perf.delete({ id: second.id });

    expect((await h.as("VIEWER").perf.list({ targetName: "add_sub" })).map((entry) => entry.id)).toContain(id);
    expect(await h.as("VIEWER").perf.list({ targetName: "other" })).toEqual([]);
    expect(await appCodeOf(h.as("VIEWER").perf.delete({ id }))).toBe("FORBIDDEN");
    await engineer.perf.delete({ id });
    expect(await appCodeOf(h.as("VIEWER").perf.get({ id }))).toBe("NOT_FOUND");
    expect(await db.prisma.perfSample.count()).toBe(0);
    const { events } = await h.as("ADMIN").audit.list({ action: "perf.", limit: 20 });
    expect(
      events
        .filter((event) => event.targetId === id)
        .map((event) => event.action)
        .reverse(),
    ).toEqual(["perf.queue", "perf.start", "perf.finish", "perf.delete"]);
  });

  it("imports a perf_analyzer CSV as a finished report with one sample per row; bad files and viewers store nothing", async () => {
    const csv = [
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency",
      "1,1021.21,19,301,23,12,597,10,2,944,1146,1231,1459",
      "4,2410.5,25,420,60,15,900,14,3,1500,1800,1900,2300",
    ].join("\n");
    const target = { kind: "MODEL" as const, name: "add_sub", version: "1" };
    const before = (await h.as("VIEWER").perf.list({ targetName: "add_sub", limit: 500 })).length;
    expect(
      await appCodeOf(h.as("VIEWER").perf.importCsv({ target, fileName: "perf.csv", csv, instanceCount: 2 })),
    ).toBe("FORBIDDEN");
    const broken = h
      .as("ENGINEER")
      .perf.importCsv({ target, fileName: "perf.csv", csv: "Concurrency,Inferences/Second\n1,2" });
    await expect(broken).rejects.toThrow(/perf\.csv: line 1: .*missing 'p50 latency'/);
    const unknown = h
      .as("ENGINEER")
      .perf.importCsv({ target: { kind: "MODEL", name: "no_such_model" }, fileName: "perf.csv", csv });
    await expect(unknown).rejects.toThrow(/not served by the gateway/);
    expect((await h.as("VIEWER").perf.list({ targetName: "add_sub", limit: 500 })).length).toBe(before);

    const { id } = await h.as("ENGINEER").perf.importCsv({ target, fileName: "perf.csv", csv, instanceCount: 2 });
    const report = await h.as("VIEWER").perf.get({ id });
    expect(report).toMatchObject({
      status: "SUCCEEDED",
      trigger: "IMPORTED",
      cause: "imported from perf.csv",
      targetVersion: "1",
      summary: { imported: { fileName: "perf.csv", instanceCount: 2 }, best: { concurrency: 4, throughput: 2410.5 } },
    });
    expect(report.summary!.steps.map((step) => step.stable)).toEqual([null, null]);
    expect(report.samples).toEqual([
      expect.objectContaining({
        concurrency: 1,
        throughput: 1021.21,
        latencyP99Us: 1459,
        queueUs: 23,
        computeUs: 619,
        latencyAvgUs: 964,
      }),
      expect.objectContaining({ concurrency: 4, throughput: 2410.5, latencyP99Us: 2300, queueUs: 60, computeUs: 929 }),
    ]);
    const { events } = await h.as("ADMIN").audit.list({ action: "perf.import", limit: 5 });
    expect(events[0]).toMatchObject({ action: "perf.import", targetId: id });
  });

  it("imports a CSV on a named hardware profile (hardware fit prices each kind by the reports on its profiles); an unknown profile is refused", async () => {
    const csv = [
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency",
      "1,400,19,301,23,12,597,10,2,944,1146,1231,1459",
    ].join("\n");
    const target = { kind: "MODEL" as const, name: "add_sub" };
    const gpu = await h.as("ADMIN").hardware.create({ name: "import-gpu", kind: "GPU", gpuCount: 1, costPerHour: 3 });
    const { id } = await h
      .as("ENGINEER")
      .perf.importCsv({ target, fileName: "gpu.csv", csv, hardwareProfileId: gpu.id });
    const row = await db.prisma.perfReport.findUniqueOrThrow({ where: { id } });
    expect(row.hardwareProfileId).toBe(gpu.id);
    const missing = h.as("ENGINEER").perf.importCsv({
      target,
      fileName: "gpu.csv",
      csv,
      hardwareProfileId: "00000000-0000-4000-8000-000000000000",
    });
    await expect(missing).rejects.toThrow("no hardware profile has id '00000000-0000-4000-8000-000000000000'");
  });

  it("cancels a running run, keeping the steps it completed", async () => {
    // The engineer's own run: only its starter (or an admin) may cancel it.
    const { id } = await h.as("ENGINEER").perf.start({
      target: { kind: "MODEL", name: "add_sub" },
      concurrency: { start: 1, end: 8, step: 1 },
      batchSize: 2,
      measurementIntervalMs: 300,
      maxTrials: 10,
    });
    // Wait until it is measuring, then cancel.
    for (let i = 0; i < 100 && (await h.as("VIEWER").perf.progress({ id })).currentConcurrency === null; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await appCodeOf(h.as("VIEWER").perf.cancel({ id }))).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as("ENGINEER").perf.delete({ id }))).toBe("CONFLICT");
    const cancelled = await h.as("ENGINEER").perf.cancel({ id });
    expect(cancelled.status).toBe("CANCELLED");
    expect(cancelled.error).toBe("cancelled by engineer@example.com");
    expect(cancelled.completedSteps).toBeLessThan(8);
    const report = await h.as("VIEWER").perf.get({ id });
    expect(report.samples.length).toBe(cancelled.completedSteps);
    expect(report.samples.every((sample) => sample.batchSize === 2)).toBe(true);
    expect(await appCodeOf(h.as("ENGINEER").perf.cancel({ id }))).toBe("CONFLICT");
    const { events } = await h.as("ADMIN").audit.list({ action: "perf.cancel", limit: 5 });
    expect(events[0]).toMatchObject({ targetId: id, actorEmail: "engineer@example.com" });
  });

  it("measures an operator, linked to its stored row, with each step's time as a waterfall", async () => {
    // Two steps in a chain: the second starts where the first ends (Y = A + 2B).
    const spec = {
      maxBatchSize: 8,
      inputs: [
        { name: "A", datatype: "FP32", dims: [16] },
        { name: "B", datatype: "FP32", dims: [16] },
      ],
      outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
      steps: [
        { id: "add", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "S" } },
        {
          id: "again",
          kind: "model",
          model: "add_sub",
          inputs: { INPUT0: "S", INPUT1: "B" },
          outputs: { OUTPUT0: "Y" },
        },
      ],
    };
    const name = `perf_op_${backend.name}`;
    await h.as("ENGINEER").operators.create({ name, spec });
    const { id } = await h
      .as("ENGINEER")
      .perf.start({ target: { kind: "OPERATOR", name }, concurrency: { start: 1, end: 1, step: 1 }, ...quick });
    await h.controlPlane.services.perfRuns.settled(id);
    const report = await h.as("VIEWER").perf.get({ id });
    expect(report.status).toBe("SUCCEEDED");
    expect(report.samples[0]!.throughput).toBeGreaterThan(0);
    const [add, again] = report.samples[0]!.stepTimes ?? [];
    expect(add).toMatchObject({ step: "add", kind: "model", model: "add_sub", startUs: 0 });
    expect(again).toMatchObject({ step: "again", kind: "model", model: "add_sub" });
    // Every measured request ran both steps (the warm-up and unstable windows included).
    expect(add!.runs).toBeGreaterThan(0);
    expect(again!.runs).toBe(add!.runs);
    expect(add!.durationUs).toBeGreaterThan(0);
    expect(again!.startUs).toBe(add!.durationUs);
    const row = await db.prisma.perfReport.findUniqueOrThrow({ where: { id } });
    expect(row.operatorId).toBe((await db.prisma.operator.findUniqueOrThrow({ where: { name } })).id);
  });

  it("marks runs a crash left RUNNING as failed when the control plane starts again", async () => {
    const orphan = await db.prisma.perfReport.create({
      data: {
        targetName: "add_sub",
        status: "RUNNING",
        // A plan as start() stores it (PerfReport.config is parsed where it is read).
        config: {
          protocol: "http",
          concurrencyRange: { start: 1, end: 3, step: 1 },
          batchSize: 1,
          measurementIntervalMs: 150,
          maxTrials: 3,
          totalSteps: 3,
        },
      },
    });
    const dir = mkdtempSync(join(tmpdir(), "operon-perf-restart-"));
    const restarted = await ControlPlane.create({
      db,
      gateway: { httpUrl: gateway.httpUrl },
      modelStoreDir: join(dir, "models"),
      uploadStagingDir: join(dir, "staging"),
      usageSampleIntervalSecs: 0,
    });
    try {
      const row = await db.prisma.perfReport.findUniqueOrThrow({ where: { id: orphan.id } });
      expect(row).toMatchObject({
        status: "FAILED",
        error: "interrupted by a restart (0 steps measured before it are kept)",
      });
      expect(row.finishedAt).not.toBeNull();
      expect(await h.as("VIEWER").perf.progress({ id: orphan.id })).toMatchObject({
        status: "FAILED",
        completedSteps: 0,
        totalSteps: 3,
        percent: 0,
      });
    } finally {
      await restarted.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("resumes runs left QUEUED by a restart: they never started, so they run when the control plane is back", async () => {
    const config = {
      protocol: "http",
      concurrencyRange: { start: 1, end: 1, step: 1 },
      batchSize: 1,
      measurementIntervalMs: 150,
      maxTrials: 3,
      totalSteps: 1,
    };
    const queued = await db.prisma.perfReport.create({ data: { targetName: "add_sub", status: "QUEUED", config } });
    const dir = mkdtempSync(join(tmpdir(), "operon-perf-resume-"));
    const restarted = await ControlPlane.create({
      db,
      gateway: { httpUrl: gateway.httpUrl, adminKey: adminKey.key },
      modelStoreDir: join(dir, "models"),
      uploadStagingDir: join(dir, "staging"),
      usageSampleIntervalSecs: 0,
    });
    try {
      await restarted.services.perfRuns.settled(queued.id);
      const row = await db.prisma.perfReport.findUniqueOrThrow({
        where: { id: queued.id },
        include: { samples: true },
      });
      expect(row).toMatchObject({ status: "SUCCEEDED", error: null, targetVersion: "1" });
      expect(row.samples.map((sample) => sample.concurrency)).toEqual([1]);
    } finally {
      await restarted.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import type { TrafficProbe } from "../services/perf/headroom-gate.js";
import type { PerfProgressView } from "../services/perf/perf-runs.js";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { startTestGateway, type TestGateway } from "../testing/gateway-harness.js";

// The perf queue through the API against a real gateway: order, joining
// duplicates, cancelling queued and running runs, the headroom gate (with a
// probe the test sets busy or idle), runExclusive, automatic runs after an
// operator registration, the admins' plan, and the version comparison.
const EXAMPLES = fileURLToPath(new URL("../../../../examples/model_repository", import.meta.url));

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway({ modelRepositories: [EXAMPLES], loadModels: ["add_sub"] });
});
afterAll(async () => {
  await gateway?.stop();
});

/** The traffic the headroom gate sees: set by the test. */
const traffic = { requestsPerSec: 0, checks: 0 };
const probe: TrafficProbe = {
  requestsPerSec: async () => {
    traffic.checks += 1;
    await new Promise((resolve) => setTimeout(resolve, 5));
    return traffic.requestsPerSec;
  },
};

const quick = { batchSize: 1, measurementIntervalMs: 120, maxTrials: 3 };
const addSub = { kind: "MODEL" as const, name: "add_sub" };
const spec = {
  maxBatchSize: 8,
  inputs: [
    { name: "A", datatype: "FP32", dims: [16] },
    { name: "B", datatype: "FP32", dims: [16] },
  ],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  steps: [
    { id: "add", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "Y" } },
  ],
};
const tinyPlan = {
  maxConcurrency: 2,
  measurementIntervalMs: 120,
  maxTrials: 3,
  timeBoundSecs: 10,
  minGainPercent: 5,
  headroomMaxRequestsPerSec: 1,
  maxWaitSecs: 30,
};

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 300; i += 1) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.each(testDatabaseBackends({ migrated: true }))("perf queue on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;
  const progress = (id: string): Promise<PerfProgressView> => h.as("VIEWER").perf.progress({ id });

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(
      db,
      { gateway: { httpUrl: gateway.httpUrl }, perfRuns: { probe, headroomRecheckMs: 20 } },
      { autoPerf: true },
    );
    await h.as("ADMIN").perf.updateSettings(tinyPlan);
  });
  afterAll(async () => {
    await h?.close();
    await db?.close();
    await backend.teardown();
  });
  beforeEach(() => {
    traffic.requestsPerSec = 0;
  });

  it("runs queued runs in order, one at a time; equal requests join; queued and running runs can be cancelled", async () => {
    const engineer = h.as("ENGINEER");
    const first = await engineer.perf.start({
      target: addSub,
      concurrency: { start: 1, end: 4, step: 1 },
      ...quick,
      measurementIntervalMs: 300,
    });
    const second = await engineer.perf.start({ target: addSub, concurrency: { start: 1, end: 1, step: 1 }, ...quick });
    const twin = await engineer.perf.start({ target: addSub, concurrency: { start: 1, end: 1, step: 1 }, ...quick });
    const third = await engineer.perf.start({ target: addSub, concurrency: { start: 2, end: 2, step: 1 }, ...quick });
    // One user may have 3 runs queued or running (PERF_RUN_LIMITS): the fourth is an admin's.
    const doomed = await h
      .as("ADMIN")
      .perf.start({ target: addSub, concurrency: { start: 3, end: 3, step: 1 }, ...quick });
    expect(twin).toEqual({ id: second.id, status: "QUEUED", joined: true });
    expect(new Set([first.id, second.id, third.id, doomed.id]).size).toBe(4);

    const queue = await h.as("VIEWER").perf.queue();
    expect(queue.runs.map((run) => run.id)).toEqual([first.id, second.id, third.id, doomed.id]);
    expect(await appCodeOf(h.as("VIEWER").perf.cancel({ id: doomed.id }))).toBe("FORBIDDEN");
    expect(await appCodeOf(engineer.perf.cancel({ id: doomed.id }))).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as("ADMIN").perf.delete({ id: doomed.id }))).toBe("CONFLICT");
    expect(await h.as("ADMIN").perf.cancel({ id: doomed.id })).toMatchObject({
      status: "CANCELLED",
      error: "cancelled by admin@example.com",
      completedSteps: 0,
    });

    // Cancel the first while it measures: it keeps what it measured, and the queue moves on.
    await until(
      () => progress(first.id),
      (view) => view.currentConcurrency !== null,
      "the first run to measure",
    );
    expect(await progress(third.id)).toMatchObject({ status: "QUEUED", queuePosition: 2 });
    expect(await engineer.perf.cancel({ id: first.id })).toMatchObject({ status: "CANCELLED" });

    await h.controlPlane.services.perfRuns.settled(third.id);
    const rows = await db.prisma.perfReport.findMany({
      where: { id: { in: [first.id, second.id, third.id, doomed.id] } },
    });
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get(second.id)).toMatchObject({ status: "SUCCEEDED", trigger: "MANUAL" });
    expect(byId.get(third.id)).toMatchObject({ status: "SUCCEEDED" });
    expect(byId.get(doomed.id)).toMatchObject({ status: "CANCELLED", startedAt: null });
    // One at a time, in order.
    expect(byId.get(second.id)!.startedAt!.getTime()).toBeGreaterThanOrEqual(byId.get(first.id)!.finishedAt!.getTime());
    expect(byId.get(third.id)!.startedAt!.getTime()).toBeGreaterThanOrEqual(byId.get(second.id)!.finishedAt!.getTime());
    expect(await engineer.perf.cancel({ id: second.id }).catch((error: Error) => error.message)).toMatch(
      /neither queued nor running \(it is succeeded\)/,
    );
  });

  it("starts an automatic run only while the host has headroom, records how busy it was, and gives up after the bounded wait", async () => {
    traffic.requestsPerSec = 250;
    const services = h.controlPlane.services;
    const queued = await services.perfRuns.requestAutomatic(addSub, "test change");
    expect(queued).toMatchObject({ status: "QUEUED", joined: false });
    const id = queued!.id;
    // A second request for the same target and version joins it.
    expect(await services.perfRuns.requestAutomatic(addSub, "another change")).toEqual({
      id,
      status: "QUEUED",
      joined: true,
    });
    const waiting = await until(
      () => progress(id),
      (view) => (view.waitingFor ?? "").includes("250 requests/s"),
      "the run to wait for headroom",
    );
    expect(waiting).toMatchObject({ status: "QUEUED", queuePosition: 0 });
    // Other measuring work waits for the slot too.
    let exclusiveRan = false;
    const exclusive = services.perfRuns.runExclusive("config search test", async () => {
      exclusiveRan = true;
      return (await progress(id)).status;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(exclusiveRan).toBe(false);

    traffic.requestsPerSec = 0;
    await services.perfRuns.settled(id);
    expect(await exclusive).toBe("SUCCEEDED");
    const report = await h.as("VIEWER").perf.get({ id });
    expect(report).toMatchObject({
      status: "SUCCEEDED",
      trigger: "AUTOMATIC",
      cause: "test change; another change",
      createdBy: null,
    });
    expect(report.samples.map((sample) => sample.concurrency)).toEqual([1, 2]);
    expect(report.config).toMatchObject({
      concurrencyRange: { start: 1, end: 2, step: 1 },
      sweep: { concurrencies: [1, 2], minGainPercent: 5, timeBoundSecs: 10 },
    });
    expect(report.hostLoad).toMatchObject({ otherRequestsPerSec: 0, requestsPerSecAtStart: 0 });
    expect(["plateau", "max-concurrency"]).toContain(report.hostLoad!.stopReason);
    expect(report.hostLoad!.waitedMs!).toBeGreaterThan(0);

    // Busy beyond maxWaitSecs: it fails with the reason instead of measuring.
    await h.as("ADMIN").perf.updateSettings({ maxWaitSecs: 0 });
    traffic.requestsPerSec = 99;
    const refused = (await services.perfRuns.requestAutomatic(addSub, "busy host"))!;
    await services.perfRuns.settled(refused.id);
    expect(await progress(refused.id)).toMatchObject({
      status: "FAILED",
      error: expect.stringMatching(
        /^the host had no headroom for 0 s \(last check: the model.s own traffic 99 requests\/s, limit 1\)/,
      ),
    });
    await h.as("ADMIN").perf.updateSettings({ maxWaitSecs: 30 });
  });

  it("cancels an automatic run that waits for headroom", async () => {
    traffic.requestsPerSec = 50;
    const { id } = (await h.controlPlane.services.perfRuns.requestAutomatic(addSub, "waits"))!;
    await until(
      () => progress(id),
      (view) => (view.waitingFor ?? "").startsWith("headroom"),
      "the run to wait",
    );
    expect(await h.as("ENGINEER").perf.cancel({ id })).toMatchObject({
      status: "CANCELLED",
      error: "cancelled by engineer@example.com",
    });
    expect((await db.prisma.perfReport.findUniqueOrThrow({ where: { id } })).startedAt).toBeNull();
  });

  it("stops the run of a target that is deleted, and the queue goes on", async () => {
    traffic.requestsPerSec = 50;
    const name = `doomed_op_${backend.name}`;
    await h.as("ENGINEER").operators.create({ name, spec });
    const { report } = await until(
      () => h.as("VIEWER").perf.latest({ kind: "OPERATOR", name }),
      (view) => view.report !== null,
      "the automatic run",
    );
    await until(
      () => progress(report!.id),
      (view) => (view.waitingFor ?? "").startsWith("headroom"),
      "the run to wait",
    );
    await h.as("ENGINEER").operators.delete({ name });
    await h.controlPlane.services.perfRuns.settled(report!.id);
    expect(await db.prisma.perfReport.count({ where: { id: report!.id } })).toBe(0);
    expect(
      await h.controlPlane.services.perfRuns.runExclusive("after the delete", async () => "the slot is free"),
    ).toBe("the slot is free");
  });

  it("queues a run when an operator is registered; admins alone change the plan, audited; off stops it", async () => {
    const name = `auto_op_${backend.name}`;
    await h.as("ENGINEER").operators.create({ name, spec });
    const latest = await until(
      () => h.as("VIEWER").perf.latest({ kind: "OPERATOR", name }),
      (view) => view.report !== null,
      "the automatic run",
    );
    expect(latest.report).toMatchObject({
      trigger: "AUTOMATIC",
      cause: "operator.create version 1",
      targetVersion: "1",
    });
    await h.controlPlane.services.perfRuns.settled(latest.report!.id);
    const done = await h.as("VIEWER").perf.latest({ kind: "OPERATOR", name });
    expect(done).toMatchObject({ report: { status: "SUCCEEDED", targetVersion: "1" }, progress: null });
    expect(done.report!.summary!.best!.throughput).toBeGreaterThan(0);

    // The plan: everyone reads it, only admins change it, bad values are refused.
    expect(await h.as("VIEWER").perf.settings()).toMatchObject({ enabled: true, maxConcurrency: 2 });
    expect(await appCodeOf(h.as("ENGINEER").perf.updateSettings({ enabled: false }))).toBe("FORBIDDEN");
    await expect(h.as("ADMIN").perf.updateSettings({ maxConcurrency: 0 })).rejects.toThrow(/maxConcurrency/);
    await expect(h.as("ADMIN").perf.updateSettings({ timeBoundSecs: 1e9 })).rejects.toThrow(/timeBoundSecs/);

    // Off: a queued automatic run is cancelled, and a new version queues nothing.
    traffic.requestsPerSec = 50;
    const { id: pending } = (await h.controlPlane.services.perfRuns.requestAutomatic(addSub, "pending"))!;
    expect(await h.as("ADMIN").perf.updateSettings({ enabled: false })).toMatchObject({ enabled: false });
    await h.controlPlane.services.perfRuns.settled(pending);
    // Cancelled by the switch, or by the queue when its turn came first.
    expect(await progress(pending)).toMatchObject({
      status: "CANCELLED",
      error: expect.stringMatching(/automatic runs (were )?turned off/),
    });
    await h.as("ENGINEER").operators.update({ name, spec });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await h.as("VIEWER").perf.latest({ kind: "OPERATOR", name })).report!.id).toBe(latest.report!.id);
    const { events } = await h.as("ADMIN").audit.list({ action: "perf.settings", limit: 10 });
    expect(events[0]).toMatchObject({
      actorEmail: "admin@example.com",
      targetType: "AutoPerfSettings",
      before: { enabled: true },
      after: { enabled: false },
    });
    await h.as("ADMIN").perf.updateSettings({ enabled: true });
  });

  it("compares each version's report with the previous version's on the version list", async () => {
    const model = `versions_${backend.name}`;
    const report = async (version: string, points: Array<[number, number, number]>) =>
      db.prisma.perfReport.create({
        data: {
          targetName: model,
          targetVersion: version,
          status: "SUCCEEDED",
          samples: {
            create: points.map(([concurrency, throughput, latencyP99Us]) => ({
              concurrency,
              throughput,
              latencyP99Us,
            })),
          },
        },
      });
    await report("1", [
      [1, 100, 1000],
      [8, 500, 2000],
    ]);
    await report("2", [
      [1, 90, 1100],
      [8, 410, 2500],
    ]);
    await db.prisma.perfReport.create({
      data: { targetName: model, targetVersion: "3", status: "QUEUED", trigger: "AUTOMATIC" },
    });
    const versions = await h.as("VIEWER").perf.versions({ model });
    expect(versions.map((entry) => [entry.version, entry.latest?.status, entry.comparison?.text ?? null])).toEqual([
      ["3", "QUEUED", null],
      ["2", "SUCCEEDED", "v2 is 18 % slower at c8 than v1 (p99 +25 %)"],
      ["1", "SUCCEEDED", null],
    ]);
    await db.prisma.perfReport.deleteMany({ where: { targetName: model } });
  });
});

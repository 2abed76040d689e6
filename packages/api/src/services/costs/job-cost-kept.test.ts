import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, type Database } from "@operon/db";
import { postgresBackend } from "@operon/db/testing/test-databases";
import { compactUsageSamples } from "../usage/usage-compaction.js";
import { queryJobCost, settleJobCosts } from "./job-cost.js";

/**
 * A job's cost is kept per throughput sample once settled (issue 24): compacting the target's usage
 * samples, or deleting them past retention, leaves the cost the job had. Samples the usage sampler has not
 * passed yet, or that a running job may still share a usage sample with, are computed on each read.
 */
describe("a batch job's cost, kept once settled (real PostgreSQL)", () => {
  const backend = postgresBackend({ migrated: true });
  let db: Database;
  // An old day: compaction merges samples older than a day.
  const T0 = Date.parse("2026-01-02T00:00:00Z");
  const at = (seconds: number) => new Date(T0 + seconds * 1000);
  let modelId = "";
  let datasetId = "";

  beforeAll(async () => {
    db = await backend.setup();
    await migrate(db);
    // 3.6/h, CPU only: a 10 s usage sample at half the CPU costs 3.6 × 0.5 × 10 / 3600 = 0.005.
    await db.prisma.hardwareProfile.create({
      data: { name: "node", kind: "CPU", cpuCores: 2, costPerHour: 3.6, currency: "USD", isDefault: true },
    });
    modelId = (await db.prisma.model.create({ data: { name: "add_sub" } })).id;
    datasetId = (
      await db.prisma.dataset.create({
        data: { name: "vectors", source: "UPLOAD", format: "CSV", path: "/nowhere/vectors.csv", query: "SELECT 1" },
      })
    ).id;
  });
  afterAll(async () => {
    await db?.close();
    await backend.teardown();
  });

  async function job(state: "DONE" | "RUNNING", samples: Array<[number, number]>) {
    const created = await db.prisma.batchJob.create({
      data: { datasetId, targetKind: "MODEL", targetName: "add_sub", mapping: [], state },
    });
    await db.prisma.batchJobSample.createMany({
      data: samples.map(([start, requests]) => ({
        jobId: created.id,
        at: at(start),
        intervalMs: 10_000,
        rows: requests,
        requests,
      })),
    });
    return created;
  }

  const usage = (starts: number[]) =>
    db.prisma.usageSample.createMany({
      data: starts.map((start) => ({
        modelId,
        modelVersion: 1,
        at: at(start),
        intervalSeconds: 10,
        requests: 100,
        cpuUtilization: 0.5,
        instanceCount: 1,
      })),
    });

  const keptCosts = async (jobId: string) =>
    (await db.prisma.batchJobSample.findMany({ where: { jobId }, orderBy: { at: "asc" } })).map((s) => s.cost);

  it("keeps what each sample cost, so compaction and retention leave the job's cost as it was", async () => {
    // Three 10 s usage samples of 100 requests; the job sent 40 in each of the first two.
    await usage([0, 10, 20]);
    const done = await job("DONE", [
      [0, 40],
      [10, 40],
    ]);
    const cost = await queryJobCost(db.prisma, done);
    expect(cost.total).toBe(0.004);
    expect(cost.lines).toEqual([
      {
        profileId: expect.any(String),
        profileName: "node",
        currency: "USD",
        requests: 80,
        targetRequests: 200,
        cost: 0.004,
      },
    ]);
    // The usage sampler passed both samples (a usage sample starts at their end): each keeps its part.
    expect(await keptCosts(done.id)).toEqual([
      expect.objectContaining({ unsampledRequests: 0, lines: [expect.objectContaining({ requests: 40 })] }),
      expect.objectContaining({ unsampledRequests: 0, lines: [expect.objectContaining({ requests: 40 })] }),
    ]);

    // Compaction merges the three into one 30 s sample; then retention deletes it.
    const compacted = await compactUsageSamples(db.prisma, new Date(T0 + 86_400_000), new Date(T0 - 1000));
    expect(compacted.removed).toBe(3);
    expect(await queryJobCost(db.prisma, done)).toEqual(cost);
    await db.prisma.usageSample.deleteMany({ where: { modelId } });
    expect(await queryJobCost(db.prisma, done)).toEqual(cost);
  });

  it("computes on each read what a later usage sample or a running job's later sample could still change", async () => {
    await db.prisma.usageSample.deleteMany({ where: { modelId } });
    await usage([100, 110]);
    // A running job: its sample at 100..110 shares no usage sample with a later one, but the sampler has not
    // passed its sample at 110..120 yet (the latest usage sample starts at 110).
    const running = await job("RUNNING", [
      [100, 50],
      [110, 50],
    ]);
    const first = await queryJobCost(db.prisma, running);
    // 0.005 × 50/100 each.
    expect(first.total).toBe(0.005);
    expect((await keptCosts(running.id)).map((cost) => cost !== null)).toEqual([true, false]);
    // The next usage sample is written: the background settling keeps the second sample too.
    await usage([120]);
    expect(await settleJobCosts(db.prisma)).toBeGreaterThanOrEqual(1);
    expect((await keptCosts(running.id)).map((cost) => cost !== null)).toEqual([true, true]);
    await db.prisma.usageSample.deleteMany({ where: { modelId } });
    expect((await queryJobCost(db.prisma, running)).total).toBe(0.005);
  });
});

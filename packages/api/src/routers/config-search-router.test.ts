import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { ControlPlane } from "../control-plane.js";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";

// Who may do what with config searches, bad input, and what a restart does
// to a search it interrupted. Searches that measure run in e2e/config-search.test.ts.
describe.each(testDatabaseBackends({ migrated: true }))("config search router on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(db);
  });
  afterAll(async () => {
    await h?.close();
    await db?.close();
    await backend.teardown();
  });

  it("lets viewers read but not start, cancel or apply", async () => {
    const id = "00000000-0000-4000-8000-000000000001";
    expect(
      await appCodeOf(h.as("VIEWER").configSearch.start({ model: "m", objective: "MAX_THROUGHPUT", p99BudgetMs: 10 })),
    ).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as("VIEWER").configSearch.cancel({ id }))).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as("VIEWER").configSearch.applyCandidate({ id }))).toBe("FORBIDDEN");
    expect(await appCodeOf(h.as(null).configSearch.list())).toBe("UNAUTHENTICATED");
    expect(await h.as("VIEWER").configSearch.list()).toEqual([]);
    expect(await appCodeOf(h.as("VIEWER").configSearch.get({ id }))).toBe("NOT_FOUND");
  });

  it("refuses bad input, in the input schema or the service", async () => {
    const engineer = h.as("ENGINEER");
    expect(
      await appCodeOf(engineer.configSearch.start({ model: "m", objective: "MAX_THROUGHPUT", p99BudgetMs: 0 })),
    ).toBe("TRPC:BAD_REQUEST");
    // @ts-expect-error: an objective that does not exist
    expect(await appCodeOf(engineer.configSearch.start({ model: "m", objective: "FASTEST", p99BudgetMs: 10 }))).toBe(
      "TRPC:BAD_REQUEST",
    );
    expect(
      await appCodeOf(
        engineer.configSearch.start({
          model: "m",
          objective: "MAX_THROUGHPUT",
          p99BudgetMs: 10,
          bounds: { maxCandidates: 0 },
        }),
      ),
    ).toBe("TRPC:BAD_REQUEST");
    expect(
      await appCodeOf(
        engineer.configSearch.start({
          model: "m",
          objective: "MAX_THROUGHPUT",
          p99BudgetMs: 10,
          measurement: { maxTrials: 1 },
        }),
      ),
    ).toBe("TRPC:BAD_REQUEST");
    expect(await appCodeOf(engineer.configSearch.get({ id: "not-a-uuid" }))).toBe("TRPC:BAD_REQUEST");
    await expect(
      engineer.configSearch.start({ model: "no_such_model", objective: "MAX_THROUGHPUT", p99BudgetMs: 10 }),
    ).rejects.toThrow(/model 'no_such_model' is not an uploaded model/);
  });

  it("marks searches a crash left RUNNING as failed when the control plane starts again", async () => {
    const model = await db.prisma.model.create({ data: { name: "crashed-search" } });
    const orphan = await db.prisma.configSearch.create({
      data: {
        modelId: model.id,
        modelName: model.name,
        objective: "MAX_THROUGHPUT",
        p99BudgetUs: 1000,
        plan: {},
        baseConfig: {},
        createdById: h.users.ENGINEER.id,
      },
    });
    const dir = mkdtempSync(join(tmpdir(), "operon-search-restart-"));
    const restarted = await ControlPlane.create({
      db,
      gateway: { httpUrl: "http://127.0.0.1:9" },
      modelStoreDir: join(dir, "models"),
      uploadStagingDir: join(dir, "staging"),
      usageSampleIntervalSecs: 0,
    });
    try {
      const row = await db.prisma.configSearch.findUniqueOrThrow({ where: { id: orphan.id } });
      expect(row).toMatchObject({ status: "FAILED", error: "interrupted by a restart" });
      expect(row.finishedAt).not.toBeNull();
      const audit = await db.prisma.auditEvent.findFirst({
        where: { action: "configSearch.fail", targetId: orphan.id },
      });
      expect(audit).not.toBeNull();
      expect(await appCodeOf(h.as("ENGINEER").configSearch.applyCandidate({ id: orphan.id }))).toBe("CONFLICT");
    } finally {
      await restarted.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

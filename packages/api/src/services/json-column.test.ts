import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { AppError } from "../app-error.js";
import { createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { parseJsonColumn } from "./json-column.js";

// JSON columns are parsed where they are read: a row that holds something
// else gives an error naming the column and the row, through the API too,
// and a queued perf run whose plan does not parse fails with that reason
// instead of stopping the queue.

describe("parseJsonColumn", () => {
  const schema = z.object({ totalSteps: z.number(), sweep: z.object({ concurrencies: z.array(z.number()) }) });
  const ref = { table: "PerfReport", column: "config", id: "r1" };

  it("returns the parsed value", () => {
    expect(parseJsonColumn(schema, { totalSteps: 2, sweep: { concurrencies: [1, 2] } }, ref)).toEqual({
      totalSteps: 2,
      sweep: { concurrencies: [1, 2] },
    });
  });

  it("names the column, the row and the first mismatch", () => {
    let caught: unknown;
    try {
      parseJsonColumn(schema, { totalSteps: 2, sweep: { concurrencies: ["x"] } }, ref);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AppError);
    expect((caught as AppError).code).toBe("INTERNAL");
    expect((caught as AppError).message).toMatch(
      /^PerfReport\.config of row r1 does not hold what Operon stores there at sweep\.concurrencies\.0: /,
    );
  });

  it("refuses a value of another type altogether", () => {
    expect(() => parseJsonColumn(schema, "plan", ref)).toThrow(/PerfReport\.config of row r1/);
    expect(() => parseJsonColumn(schema, [1, 2], ref)).toThrow(/PerfReport\.config of row r1/);
  });
});

describe.each(testDatabaseBackends({ migrated: true }))("JSON columns read through the API on $name", (backend) => {
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

  /** The message of the error a call ends with. */
  async function failure(promise: Promise<unknown>): Promise<string> {
    try {
      await promise;
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error("expected the call to fail");
  }

  it("a perf report whose summary does not parse: get and list name the column and the row", async () => {
    const row = await db.prisma.perfReport.create({
      data: { targetName: "bad_summary", status: "SUCCEEDED", summary: { version: 3 } },
    });
    const viewer = h.as("VIEWER");
    expect(await failure(viewer.perf.get({ id: row.id }))).toMatch(
      new RegExp(`PerfReport\\.summary of row ${row.id} does not hold what Operon stores there at version`),
    );
    expect(await failure(viewer.perf.list({ targetName: "bad_summary" }))).toMatch(
      new RegExp(`PerfReport\\.summary of row ${row.id}`),
    );
    await db.prisma.perfReport.delete({ where: { id: row.id } });
  });

  it("a queued perf run whose plan does not parse fails with the reason, and the queue goes on", async () => {
    const row = await db.prisma.perfReport.create({
      data: {
        targetName: "bad_plan",
        status: "QUEUED",
        config: {
          protocol: "http",
          concurrencyRange: { start: 1, end: 1, step: 1 },
          batchSize: 1,
          measurementIntervalMs: 100,
          maxTrials: 3,
          totalSteps: "many",
        },
      },
    });
    const perfRuns = h.controlPlane.services.perfRuns;
    expect(await perfRuns.resume()).toBeGreaterThanOrEqual(1);
    await perfRuns.settled(row.id);
    const after = await db.prisma.perfReport.findUniqueOrThrow({ where: { id: row.id } });
    expect(after.status).toBe("FAILED");
    expect(after.error).toMatch(new RegExp(`PerfReport\\.config of row ${row.id} .* at totalSteps`));
    await db.prisma.perfReport.delete({ where: { id: row.id } });
  });

  it("a config search whose plan does not parse: get names the column and the row", async () => {
    const model = await db.prisma.model.create({ data: { name: "bad_search_model" } });
    const search = await db.prisma.configSearch.create({
      data: {
        modelId: model.id,
        modelName: model.name,
        status: "FAILED",
        objective: "MAX_THROUGHPUT",
        p99BudgetUs: 1000,
        plan: { bounds: "wide" },
        baseConfig: {},
      },
    });
    expect(await failure(h.as("VIEWER").configSearch.get({ id: search.id }))).toMatch(
      new RegExp(`ConfigSearch\\.plan of row ${search.id} does not hold what Operon stores there at bounds`),
    );
  });
});

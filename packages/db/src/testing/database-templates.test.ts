// The run's template databases (made by the unit project's global setup,
// database-templates-setup.ts): a test asking for a migrated database gets
// one at the latest migration, and one asking for an empty database (a test of
// migrating) still gets every migration to apply.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../database.js";
import { migrate, readMigrations } from "../migrate.js";
import { MIGRATED_EMBEDDED_TEMPLATE_ENV, seedEmbeddedDatabase } from "./embedded-template.js";
import { POSTGRES_TEMPLATE_ENV } from "./postgres-template.js";
import { createTestPostgresDatabase, testDatabaseBackends } from "./test-databases.js";

const ALL = readMigrations().map((migration) => migration.name);

async function migrateAndClose(db: Database): Promise<{ applied: string[]; alreadyApplied: string[] }> {
  try {
    return await migrate(db);
  } finally {
    await db.close();
  }
}

describe("the run's template databases", () => {
  it("are made by the global setup", () => {
    expect(process.env[MIGRATED_EMBEDDED_TEMPLATE_ENV]).toBeTruthy();
    expect(process.env[POSTGRES_TEMPLATE_ENV]).toBeTruthy();
  });

  for (const migrated of [true, false]) {
    describe.each(testDatabaseBackends({ migrated }))(`migrated: ${migrated}, on $name`, (backend) => {
      afterAll(() => backend.teardown());

      it(migrated ? "starts at the latest migration" : "starts empty, every migration to apply", async () => {
        const result = await migrateAndClose(await backend.setup());
        expect(result).toEqual(migrated ? { applied: [], alreadyApplied: ALL } : { applied: ALL, alreadyApplied: [] });
      });
    });
  }

  it("gives a process a migrated PostgreSQL database by URL, and an empty one by default", async () => {
    for (const migrated of [true, false]) {
      const database = await createTestPostgresDatabase({ migrated });
      try {
        const { applied } = await migrateAndClose(await openDatabase({ url: database.url }));
        expect(applied).toEqual(migrated ? [] : ALL);
      } finally {
        await database.drop();
      }
    }
  });

  it("seeds an embedded data folder migrated or empty, as asked", async () => {
    const root = mkdtempSync(join(tmpdir(), "operon-seed-"));
    try {
      for (const migrated of [true, false]) {
        const dir = join(root, String(migrated));
        expect(seedEmbeddedDatabase(dir, { migrated })).toBe(true);
        const { applied } = await migrateAndClose(await openDatabase({ url: `file:${dir}` }));
        expect(applied).toEqual(migrated ? [] : ALL);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

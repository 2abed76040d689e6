// Test databases for suites that must run against both the embedded
// database and a real PostgreSQL. Each backend gives a fresh database of its
// own and removes it on teardown: empty (not migrated) by default, for tests
// of migrating; with `migrated: true`, for tests that migrate it anyway, a
// copy of the run's migrated template (embedded-template.ts,
// postgres-template.ts) where the run has one, so their migrate() is a check
// that finds nothing to apply.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Database } from "../database.js";
import { seedEmbeddedDatabase } from "./embedded-template.js";
import { createPostgresDatabase, runAsAdmin } from "./postgres-template.js";

// PostgreSQL is required, never skipped: the server that CI and this machine
// run on 127.0.0.1:5432 (override with OPERON_TEST_POSTGRES_URL, pointing at a
// database the user may CREATE DATABASE from).
export const TEST_POSTGRES_ADMIN_URL =
  process.env.OPERON_TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/test";

export interface TestDatabaseBackend {
  name: "embedded" | "postgres";
  setup(): Promise<Database>;
  teardown(): Promise<void>;
}

/** Whether a test database may start at the latest migration (see the top of this file). */
export interface TestDatabaseOptions {
  migrated?: boolean;
}

export function embeddedBackend(options: TestDatabaseOptions = {}): TestDatabaseBackend {
  let dir = "";
  return {
    name: "embedded",
    async setup() {
      dir = mkdtempSync(join(tmpdir(), "operon-db-"));
      // A copy of a template cluster, so the test pays for what it tests, not for PGlite's initdb.
      seedEmbeddedDatabase(join(dir, "db"), { migrated: options.migrated ?? false });
      return openDatabase({ url: `file:${join(dir, "db")}` });
    },
    async teardown() {
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function postgresBackend(options: TestDatabaseOptions = {}): TestDatabaseBackend {
  const dbName = `operon_test_${randomBytes(6).toString("hex")}`;
  let created = false;
  return {
    name: "postgres",
    async setup() {
      const url = await createPostgresDatabase(TEST_POSTGRES_ADMIN_URL, dbName, {
        migrated: options.migrated ?? false,
      });
      created = true;
      return openDatabase({ url });
    },
    async teardown() {
      if (created) await runAsAdmin(TEST_POSTGRES_ADMIN_URL, `DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    },
  };
}

/** Both backends, for `describe.each(testDatabaseBackends())`. */
export function testDatabaseBackends(options: TestDatabaseOptions = {}): TestDatabaseBackend[] {
  return [embeddedBackend(options), postgresBackend(options)];
}

/**
 * A fresh PostgreSQL database for tests that hand its URL to other processes
 * (`operon serve --database-url`); drop() removes it, connections and all.
 * Empty unless `migrated: true` (see the top of this file).
 */
export async function createTestPostgresDatabase(
  options: TestDatabaseOptions = {},
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `operon_test_${randomBytes(6).toString("hex")}`;
  const url = await createPostgresDatabase(TEST_POSTGRES_ADMIN_URL, name, { migrated: options.migrated ?? false });
  return { url, drop: () => runAsAdmin(TEST_POSTGRES_ADMIN_URL, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

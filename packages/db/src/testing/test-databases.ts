// Test databases for suites that must run against both the embedded
// database and a real PostgreSQL. Each backend gives a fresh, empty database
// (not migrated) and removes it on teardown.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { openDatabase, type Database } from "../database.js";
import { seedEmbeddedDatabase } from "./embedded-template.js";

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

export function embeddedBackend(): TestDatabaseBackend {
  let dir = "";
  return {
    name: "embedded",
    async setup() {
      dir = mkdtempSync(join(tmpdir(), "operon-db-"));
      // A copy of the run's empty cluster, so the test pays for Operon's migrations, not PGlite's initdb.
      seedEmbeddedDatabase(join(dir, "db"));
      return openDatabase({ url: `file:${join(dir, "db")}` });
    },
    async teardown() {
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function postgresBackend(): TestDatabaseBackend {
  const dbName = `operon_test_${randomBytes(6).toString("hex")}`;
  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: TEST_POSTGRES_ADMIN_URL, connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
    } catch (err) {
      throw new Error(
        `PostgreSQL is required for the data layer tests and is unreachable at ${TEST_POSTGRES_ADMIN_URL} (${(err as Error).message}); ` +
          `start it (pg_ctlcluster <version> main start) or set OPERON_TEST_POSTGRES_URL`,
      );
    }
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };
  let created = false;
  return {
    name: "postgres",
    async setup() {
      await admin((c) => c.query(`CREATE DATABASE "${dbName}"`));
      created = true;
      const url = new URL(TEST_POSTGRES_ADMIN_URL);
      url.pathname = `/${dbName}`;
      return openDatabase({ url: url.toString() });
    },
    async teardown() {
      if (created) await admin((c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
    },
  };
}

/** Both backends, for `describe.each(testDatabaseBackends())`. */
export function testDatabaseBackends(): TestDatabaseBackend[] {
  return [embeddedBackend(), postgresBackend()];
}

/**
 * A fresh, empty PostgreSQL database for tests that hand its URL to other
 * processes (`operon serve --database-url`); drop() removes it, connections
 * and all.
 */
export async function createTestPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `operon_test_${randomBytes(6).toString("hex")}`;
  const admin = async (sql: string): Promise<void> => {
    const client = new pg.Client({ connectionString: TEST_POSTGRES_ADMIN_URL, connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
    } catch (err) {
      throw new Error(
        `PostgreSQL is required and is unreachable at ${TEST_POSTGRES_ADMIN_URL} (${(err as Error).message}); ` +
          `start it (pg_ctlcluster <version> main start) or set OPERON_TEST_POSTGRES_URL`,
      );
    }
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE "${name}"`);
  const url = new URL(TEST_POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

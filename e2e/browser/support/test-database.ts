import { randomBytes } from "node:crypto";
import pg from "pg";

/**
 * A fresh, empty PostgreSQL database for one browser-test system, dropped
 * after it stops. The embedded database (`memory:`, PGlite) was the largest
 * part of a system's start-up on the 2-core machine: "control plane database
 * ready" 34.7 s after the spawn against 12.3 s with PostgreSQL (the first
 * line of the banner at 68 s against 41 s, one start each, load average 35),
 * on the PostgreSQL server that the system tests already require.
 * The control plane's router tests cover both databases; the console's do
 * not depend on which one is behind the API.
 */
export const TEST_POSTGRES_ADMIN_URL =
  process.env.OPERON_TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/test";

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

async function asAdmin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_POSTGRES_ADMIN_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `the browser tests need PostgreSQL, unreachable at ${TEST_POSTGRES_ADMIN_URL} (${(error as Error).message}); start it (pg_ctlcluster <version> main start) or set OPERON_TEST_POSTGRES_URL`,
      { cause: error },
    );
  }
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `operon_browser_${randomBytes(6).toString("hex")}`;
  await asAdmin(`CREATE DATABASE "${name}"`);
  const url = new URL(TEST_POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      await asAdmin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

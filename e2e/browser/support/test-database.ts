import { randomBytes } from "node:crypto";
import { createPostgresDatabase, runAsAdmin } from "@operon/db/testing/postgres-template";

/**
 * A fresh PostgreSQL database for one browser-test system, dropped
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

/**
 * The database starts as a copy of the run's migrated template (made by the
 * browser project's global setup, global-setup.ts): the server's start-up
 * migrate() then finds nothing to apply instead of running 26 migrations on
 * every system's start. First starts on an empty database are the system
 * tests' subject (e2e/control-plane.test.ts, e2e/cluster-roles.test.ts).
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `operon_browser_${randomBytes(6).toString("hex")}`;
  let url: string;
  try {
    url = await createPostgresDatabase(TEST_POSTGRES_ADMIN_URL, name, { migrated: true });
  } catch (error) {
    throw new Error(`the browser tests need PostgreSQL: ${(error as Error).message}`, { cause: error });
  }
  let dropped = false;
  return {
    url,
    async drop() {
      if (dropped) return;
      dropped = true;
      await runAsAdmin(TEST_POSTGRES_ADMIN_URL, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

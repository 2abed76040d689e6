// A PostgreSQL database migrated once per test run, which the tests that would
// migrate anyway get copies of (CREATE DATABASE ... TEMPLATE), instead of each
// applying every migration to an empty database again: 26 migrations took
// 5.5 s on the loaded 2-core CI machine, a copy 0.1 s more than an empty
// database. The copy is what Operon's migrate() leaves; its migrate() then
// finds nothing to apply. Tests of migrating itself still get empty databases.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { openDatabase } from "../database.js";
import { migrate } from "../migrate.js";

/** The run's migrated template database (its name); set by the projects' global setup (vitest.config.ts). */
export const POSTGRES_TEMPLATE_ENV = "OPERON_TEST_POSTGRES_TEMPLATE";

/** Runs statements one after another on a connection of its own to `url`. */
export async function runAsAdmin(url: string, ...statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (err) {
    throw new Error(
      `PostgreSQL is required and is unreachable at ${url} (${(err as Error).message}); ` +
        `start it (pg_ctlcluster <version> main start) or set OPERON_TEST_POSTGRES_URL`,
      { cause: err },
    );
  }
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Makes the template on the server at `adminUrl` (a database the user may
 * CREATE DATABASE from) and publishes its name through the environment, which
 * vitest hands to the workers it starts afterwards. The template takes no
 * connections (ALLOW_CONNECTIONS false): a connection to it would make every
 * CREATE DATABASE from it fail. An unreachable server is not an error here:
 * the tests that need PostgreSQL then fail saying so, and the others run.
 * Returns the teardown that drops it.
 */
export async function providePostgresTemplate(adminUrl: string): Promise<() => Promise<void>> {
  // Several projects of one run list the setup; they run in the same process, so the first one's template serves all.
  if (process.env[POSTGRES_TEMPLATE_ENV]) return async () => {};
  const name = `operon_template_${randomBytes(6).toString("hex")}`;
  try {
    await runAsAdmin(adminUrl, `CREATE DATABASE "${name}"`);
  } catch (error) {
    process.emitWarning(`no migrated PostgreSQL template for this run: ${(error as Error).message}`);
    return async () => {};
  }
  const drop = (): Promise<void> =>
    runAsAdmin(
      adminUrl,
      `ALTER DATABASE "${name}" IS_TEMPLATE false`,
      `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`,
    );
  try {
    const db = await openDatabase({ url: databaseUrl(adminUrl, name) });
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
    await runAsAdmin(adminUrl, `ALTER DATABASE "${name}" IS_TEMPLATE true ALLOW_CONNECTIONS false`);
  } catch (error) {
    await drop().catch(() => undefined);
    throw error;
  }
  process.env[POSTGRES_TEMPLATE_ENV] = name;
  return async () => {
    delete process.env[POSTGRES_TEMPLATE_ENV];
    await drop();
  };
}

/**
 * Creates the database `name` on the server at `adminUrl` and returns its
 * URL: with `migrated: true`, for a test that migrates it anyway (a control
 * plane start), a copy of the run's migrated template; an empty database
 * otherwise, and when the run has no template (then the test's own migrate()
 * does the work, as before).
 */
export async function createPostgresDatabase(
  adminUrl: string,
  name: string,
  options: { migrated: boolean },
): Promise<string> {
  const template = options.migrated ? process.env[POSTGRES_TEMPLATE_ENV] : undefined;
  await runAsAdmin(adminUrl, `CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ""}`);
  return databaseUrl(adminUrl, name);
}

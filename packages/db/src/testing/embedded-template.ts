// Embedded databases made once per test run and copied, instead of made
// again by every test that needs one. PGlite's first open of an empty folder
// runs initdb inside WebAssembly: 7 to 16 s on the loaded 2-core CI machine,
// against under 2 s to open a folder that already holds an empty cluster (a
// 40 MB copy takes a third of a second). Migrating it costs seconds more on
// every control plane start. So there are two templates: the empty cluster
// (what initdb writes) and the same cluster migrated to the latest migration
// (what Operon's first start writes). A test that would migrate anyway starts
// from the migrated one and Operon's migrate() finds nothing to apply; a test
// about migrating takes the empty one or a fresh folder (@operon/db's own).
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../database.js";
import { migrate } from "../migrate.js";

/** Where the run's empty template is; set by the global setup of the unit and system projects (vitest.config.ts). */
export const EMBEDDED_TEMPLATE_ENV = "OPERON_TEST_EMBEDDED_TEMPLATE";
/** Where the run's migrated template is (same setup). */
export const MIGRATED_EMBEDDED_TEMPLATE_ENV = "OPERON_TEST_EMBEDDED_TEMPLATE_MIGRATED";

/**
 * Makes the templates (an initialized cluster opened and closed by Operon's
 * own openDatabase, and a copy of it migrated by Operon's migrate) and
 * publishes them to the test processes through the environment, which vitest
 * hands to the workers it starts afterwards. Returns the teardown that
 * removes them (nothing to remove when an earlier setup of the same run made them).
 */
export async function provideEmbeddedTemplate(): Promise<() => void> {
  // Several projects of one run list this setup; they run in the same process, so the first one's templates serve all.
  const existing = process.env[EMBEDDED_TEMPLATE_ENV];
  const existingMigrated = process.env[MIGRATED_EMBEDDED_TEMPLATE_ENV];
  if (existing && existsSync(existing) && existingMigrated && existsSync(existingMigrated)) return () => {};
  const root = mkdtempSync(join(tmpdir(), "operon-db-template-"));
  const empty = join(root, "db");
  const migrated = join(root, "migrated");
  const removeRoot = (): void => rmSync(root, { recursive: true, force: true });
  try {
    await (await openDatabase({ url: `file:${empty}` })).close();
    cpSync(empty, migrated, { recursive: true });
    const db = await openDatabase({ url: `file:${migrated}` });
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
  } catch (error) {
    removeRoot();
    throw error;
  }
  process.env[EMBEDDED_TEMPLATE_ENV] = empty;
  process.env[MIGRATED_EMBEDDED_TEMPLATE_ENV] = migrated;
  return () => {
    delete process.env[EMBEDDED_TEMPLATE_ENV];
    delete process.env[MIGRATED_EMBEDDED_TEMPLATE_ENV];
    removeRoot();
  };
}

/**
 * Puts a copy of a template at `dir` (which must not exist yet, or be empty)
 * so that opening it skips initdb, and with `migrated` the migrations too.
 * `migrated: true` is for tests that migrate anyway (a control plane start,
 * `operon admin create`): the database is then what a first start leaves.
 * Tests of migrating itself pass `migrated: false`. Without a template (a
 * test run outside the projects' setup) it does nothing and the database is
 * created and migrated the slow way, as before. Returns whether it copied.
 */
export function seedEmbeddedDatabase(dir: string, options: { migrated: boolean }): boolean {
  const template = process.env[options.migrated ? MIGRATED_EMBEDDED_TEMPLATE_ENV : EMBEDDED_TEMPLATE_ENV];
  if (!template) return false;
  if (!existsSync(template)) {
    throw new Error(`the embedded template ${template} does not exist (removed before the run ended?)`);
  }
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new Error(`cannot seed the embedded database at ${dir}: the folder is not empty`);
  }
  cpSync(template, dir, { recursive: true });
  return true;
}

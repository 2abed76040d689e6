// An empty embedded database made once per test run and copied, instead of
// made again by every test that needs one. PGlite's first open of an empty
// folder runs initdb inside WebAssembly: 7 to 16 s on the loaded 2-core CI
// machine, against under 2 s to open a folder that already holds an empty
// cluster (a 40 MB copy takes a third of a second). The copy is what initdb
// would have written; Operon's own work on it (opening, migrating, serving)
// runs unchanged, and @operon/db's own tests still open fresh folders.
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../database.js";

/** Where the run's template is; set by the system project's global setup (vitest.config.ts). */
export const EMBEDDED_TEMPLATE_ENV = "OPERON_TEST_EMBEDDED_TEMPLATE";

/**
 * Makes the template (an initialized, unmigrated cluster, opened and closed
 * by Operon's own openDatabase) and publishes it to the test processes
 * through the environment, which vitest hands to the workers it starts
 * afterwards. Returns the teardown that removes it (nothing to remove when an
 * earlier setup of the same run made it).
 */
export async function provideEmbeddedTemplate(): Promise<() => void> {
  // Several projects of one run list this setup; they run in the same process, so the first one's template serves all.
  const existing = process.env[EMBEDDED_TEMPLATE_ENV];
  if (existing && existsSync(existing)) return () => {};
  const root = mkdtempSync(join(tmpdir(), "operon-db-template-"));
  const template = join(root, "db");
  const db = await openDatabase({ url: `file:${template}` });
  await db.close();
  process.env[EMBEDDED_TEMPLATE_ENV] = template;
  return () => {
    delete process.env[EMBEDDED_TEMPLATE_ENV];
    rmSync(root, { recursive: true, force: true });
  };
}

/**
 * Puts a copy of the template at `dir` (which must not exist yet, or be
 * empty) so that opening it skips initdb. Without a template (a test run
 * outside the system project's setup) it does nothing and the database is
 * created the slow way, as before. Returns whether it copied.
 */
export function seedEmbeddedDatabase(dir: string): boolean {
  const template = process.env[EMBEDDED_TEMPLATE_ENV];
  if (!template) return false;
  if (!existsSync(template)) {
    throw new Error(`${EMBEDDED_TEMPLATE_ENV} names ${template}, which does not exist (removed before the run ended?)`);
  }
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new Error(`cannot seed the embedded database at ${dir}: the folder is not empty`);
  }
  cpSync(template, dir, { recursive: true });
  return true;
}

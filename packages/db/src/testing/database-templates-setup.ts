// The global setup of the unit and system projects (vitest.config.ts): the
// run's template databases, copied by the tests that need a database instead
// of each making and migrating its own (embedded-template.ts,
// postgres-template.ts). Runs in vitest's main process before any worker starts.
import { provideEmbeddedTemplate } from "./embedded-template.js";
import { providePostgresTemplate } from "./postgres-template.js";
import { TEST_POSTGRES_ADMIN_URL } from "./test-databases.js";

export default async function setup(): Promise<() => Promise<void>> {
  const removeEmbedded = await provideEmbeddedTemplate();
  const dropPostgres = await providePostgresTemplate(TEST_POSTGRES_ADMIN_URL);
  return async () => {
    removeEmbedded();
    await dropPostgres();
  };
}

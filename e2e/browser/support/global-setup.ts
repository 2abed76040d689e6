import { providePostgresTemplate } from "@operon/db/testing/postgres-template";
import type { TestProject } from "vitest/node";
import { startSystemBroker } from "./system-broker.js";
import { TEST_POSTGRES_ADMIN_URL } from "./test-database.js";

/**
 * The browser project's global set-up (vitest.config.ts): the migrated
 * PostgreSQL template that every system's database is a copy of
 * (test-database.ts), and the broker of the shared systems (system-broker.ts)
 * for the whole run, its address handed to the spec files
 * (inject("operonSystemBroker")), its systems stopped at the end.
 */
declare module "vitest" {
  export interface ProvidedContext {
    operonSystemBroker: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Before the broker: its shared systems' databases are copies of the template too.
  const dropTemplate = await providePostgresTemplate(TEST_POSTGRES_ADMIN_URL);
  const broker = await startSystemBroker();
  project.provide("operonSystemBroker", broker.url);
  return async () => {
    await broker.stop();
    await dropTemplate();
  };
}

import type { TestProject } from "vitest/node";
import { startSystemBroker } from "./system-broker.js";

/**
 * The browser project's global set-up (vitest.config.ts): the broker of the
 * shared systems (system-broker.ts) for the whole run, its address handed to
 * the spec files (inject("operonSystemBroker")), its systems stopped at the end.
 */
declare module "vitest" {
  export interface ProvidedContext {
    operonSystemBroker: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const broker = await startSystemBroker();
  project.provide("operonSystemBroker", broker.url);
  return () => broker.stop();
}

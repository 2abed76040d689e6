import { readFileSync } from "node:fs";
import type { ChildProcess } from "node:child_process";
import { inject } from "vitest";
import { signedInApiSession } from "./admin-api.js";
import type { RunningOperonWithConsole } from "./operon-with-console.js";
import { BOOTSTRAP_ADMIN, type SharedSystemDescriptor, type SharedSystemRequest } from "./system-broker.js";

/**
 * A spec's side of the shared systems (system-broker.ts): asks the broker
 * for the running system with these flags and gives it the shape of a
 * system the spec started itself, except that it cannot be stopped (the
 * harness stops it after the last spec) and its process object lives in
 * vitest's main process (pid, URLs, data folder and output are here).
 */
export async function sharedOperonWithConsole(request: SharedSystemRequest): Promise<RunningOperonWithConsole> {
  const descriptor = await requestSharedSystem(request);
  return sharedSystemHandle(descriptor);
}

async function requestSharedSystem(request: SharedSystemRequest): Promise<SharedSystemDescriptor> {
  const broker = inject("operonSystemBroker");
  if (broker === undefined)
    throw new Error(
      "no shared-system broker: run the spec in vitest's browser project (vitest.config.ts sets its globalSetup to e2e/browser/support/global-setup.ts)",
    );
  const response = await fetch(`${broker}/system`, { method: "POST", body: JSON.stringify(request) });
  const body = (await response.json()) as SharedSystemDescriptor | { error: string };
  if (!response.ok || "error" in body)
    throw new Error(`the shared system did not start: ${"error" in body ? body.error : response.status}`);
  return body;
}

function sharedSystemHandle(descriptor: SharedSystemDescriptor): RunningOperonWithConsole {
  const output = (): string => readFileSync(descriptor.logFile, "utf8");
  const notHere = (what: string): never => {
    throw new Error(
      `a shared system's ${what} is not available to a spec (the harness owns it): start the spec's own system (useSignedInConsole without shared: true)`,
    );
  };
  return {
    get process(): ChildProcess {
      return notHere("process object");
    },
    pid: descriptor.pid,
    httpUrl: descriptor.httpUrl,
    grpcAddress: descriptor.grpcAddress,
    metricsUrl: descriptor.metricsUrl,
    dataDir: descriptor.dataDir,
    apiUrl: descriptor.apiUrl,
    consoleUrl: descriptor.consoleUrl,
    setupUrl: undefined,
    // Gateways joining it would change what every shared spec sees.
    get databaseUrl(): string {
      return notHere("database URL");
    },
    output,
    async waitForOutput(pattern: RegExp, timeoutMs = 30_000): Promise<string> {
      for (const deadline = Date.now() + timeoutMs; ; await new Promise((resolve) => setTimeout(resolve, 100))) {
        const text = output();
        const match = pattern.exec(text);
        if (match !== null) return match[0];
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${pattern} in server output:\n${text.slice(-4000)}`);
      }
    },
    stop: async () => notHere("stop()"),
    // It exits after the last spec, when no spec is there to wait for it.
    exited: new Promise(() => {}),
  };
}

/**
 * The spec's own admin on a shared system, created through the system's
 * bootstrap admin: what a spec's admin owns (API keys, sessions) is its own.
 * Each spec on a shared system names an admin email no other spec uses.
 */
export async function createSpecAdmin(
  operon: RunningOperonWithConsole,
  admin: { email: string; password: string },
): Promise<void> {
  const api = await signedInApiSession(operon, BOOTSTRAP_ADMIN);
  try {
    await api.client.users.create.mutate({ email: admin.email, role: "ADMIN", password: admin.password });
  } catch (error) {
    throw new Error(
      `could not create the spec's admin ${admin.email} on the shared system (${(error as Error).message}): each spec on a shared system needs an admin email of its own`,
      { cause: error },
    );
  }
}

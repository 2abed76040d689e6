import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EXAMPLE_REPOSITORY, REPO_ROOT, startOperon, type RunningOperon } from "../../support/operon-process.js";
import { createTestDatabase } from "./test-database.js";

/** Where the server's whole output goes when it fails to start (kept by CI with the screenshots). */
export const SERVER_LOG_DIR = join(REPO_ROOT, "e2e/artifacts/logs");

/**
 * The real system as a user starts it: `operon serve` with the example
 * models, the control plane API and the console (Next.js) on free ports,
 * a fresh PostgreSQL database of its own (test-database.ts; dropped when
 * the server exits) and a temporary data folder.
 */
export interface RunningOperonWithConsole extends RunningOperon {
  /** Where the console listens, e.g. http://127.0.0.1:41234 */
  consoleUrl: string;
  /** The first-run link `operon serve` printed (only while no account exists). */
  setupUrl: string | undefined;
  /** Its PostgreSQL database (dropped when the server exits): gateways started beside it (--role gateway) join it. */
  databaseUrl: string;
}

export interface OperonWithConsoleOptions {
  /** Create this first admin at start (--admin-email/--admin-password) instead of printing a setup link. */
  admin?: { email: string; password: string };
  /** More `operon serve` flags, e.g. ["--usage-sample-secs", "1"]. */
  extraArgs?: string[];
  /** Added to the server's environment (e.g. OPERON_NVML_LIB). */
  env?: Record<string, string>;
}

const CONSOLE_LINE = /Operon console on (http:\/\/[^\s,]+)/;
const SETUP_LINE = /First run: open (http:\/\/\S+\/setup\?token=[A-Za-z0-9_-]+)/;

export async function startOperonWithConsole(
  options: OperonWithConsoleOptions = {},
): Promise<RunningOperonWithConsole> {
  const database = await createTestDatabase();
  const args = [
    // startOperon leaves the control plane off unless asked (most system tests need only the data plane).
    "--control-plane",
    "--model-repository",
    EXAMPLE_REPOSITORY,
    "--model-control-mode",
    "explicit",
    "--load-model",
    "*",
    "--api-port",
    "0",
    // 0: the CLI picks a free port and prints where the console is.
    "--console-port",
    "0",
    "--database-url",
    database.url,
    ...(options.admin ? ["--admin-email", options.admin.email, "--admin-password", options.admin.password] : []),
    ...(options.extraArgs ?? []),
  ];
  let operon: RunningOperon;
  try {
    operon = await startOperon(args, { timeoutMs: 120_000, ...(options.env ? { env: options.env } : {}) });
  } catch (error) {
    await database.drop();
    throw error;
  }
  // The database goes with the server: after stop(), or after any other end (a test that kills it).
  const dropped = operon.exited.then(() => database.drop().catch(() => {}));
  const stopServer = operon.stop.bind(operon);
  operon.stop = async (signal) => {
    const code = await stopServer(signal);
    await dropped;
    return code;
  };
  try {
    const consoleUrl = operon.consoleUrl ?? CONSOLE_LINE.exec(await operon.waitForOutput(CONSOLE_LINE, 120_000))![1]!;
    const setupUrl = options.admin ? undefined : SETUP_LINE.exec(await operon.waitForOutput(SETUP_LINE, 30_000))![1]!;
    return Object.assign(operon, { consoleUrl, setupUrl, databaseUrl: database.url });
  } catch (error) {
    await operon.stop();
    mkdirSync(SERVER_LOG_DIR, { recursive: true });
    const logFile = join(SERVER_LOG_DIR, `operon-console-start-${Date.now()}.log`);
    writeFileSync(logFile, operon.output());
    throw new Error(`${(error as Error).message.split("\n")[0]} (the whole output is in ${logFile})`, { cause: error });
  }
}

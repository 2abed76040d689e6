import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { seedEmbeddedDatabase } from "@operon/db/testing/embedded-template";

/**
 * Starts the real `operon serve` (the built CLI, as a user runs it) on free
 * ports and tells the test where it listens. Every test file drives the
 * running process over the network; nothing here calls handlers directly.
 */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const OPERON_BIN = join(REPO_ROOT, "apps/cli/bin/operon.js");
export const EXAMPLE_REPOSITORY = join(REPO_ROOT, "examples/model_repository");

export interface RunningOperon {
  process: ChildProcess;
  pid: number;
  httpUrl: string;
  grpcAddress: string;
  metricsUrl: string;
  /** The server's --data-dir (uploaded models land under <dataDir>/uploaded-models). */
  dataDir: string;
  /** The control plane API's base URL (tRPC under /api/trpc) when started with --control-plane. */
  apiUrl: string | undefined;
  /** The console's URL when the console runs. */
  consoleUrl: string | undefined;
  /** Everything the server printed so far (stdout + stderr). */
  output(): string;
  /** Waits for a line of output matching the pattern. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** SIGTERM, then waits for exit; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function startOperon(
  args: string[],
  options: {
    timeoutMs?: number;
    cwd?: string /** --data-dir; default a fresh temporary folder */;
    dataDir?: string /** added to the environment */;
    env?: Record<string, string> /** own process group (signal it with process.kill(-pid)) */;
    detached?: boolean;
  } = {},
): Promise<RunningOperon> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "operon-e2e-data-"));
  // A control plane on the embedded database in a data folder made here starts from a copy of the run's
  // migrated cluster rather than PGlite's initdb and 26 migrations (packages/db/src/testing/embedded-template.ts):
  // what a first start leaves; the server still opens it and checks its migrations, finding none to apply.
  // Tests that bring their own folder (those about a first start) start it truly fresh.
  if (options.dataDir === undefined && usesEmbeddedControlPlane(args, options.env)) {
    seedEmbeddedDatabase(join(dataDir, "db"), { migrated: true });
  }
  const child = spawn(
    process.execPath,
    // The control plane (database, API, console) is off unless a test asks for it: most system
    // tests exercise the data plane, and each server would otherwise start a database and a console.
    [
      OPERON_BIN,
      "serve",
      "--http-port",
      "0",
      "--grpc-port",
      "0",
      "--metrics-port",
      "0",
      "--data-dir",
      dataDir,
      "--control-plane=false",
      ...args,
    ],
    {
      cwd: options.cwd ?? REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...options.env },
      detached: options.detached ?? false,
    },
  );
  let output = "";
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer): void => {
    output += chunk.toString("utf8");
    for (const listener of listeners) listener();
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) =>
    child.once("exit", (code, signal) => resolveExit({ code, signal })),
  );

  const waitForOutput = (pattern: RegExp, timeoutMs = 30_000): Promise<string> =>
    new Promise((resolveWait, rejectWait) => {
      const check = (): boolean => {
        const match = pattern.exec(output);
        if (match === null) return false;
        cleanup();
        resolveWait(match[0]);
        return true;
      };
      const timer = setTimeout(() => {
        cleanup();
        rejectWait(new Error(`timed out waiting for ${pattern} in server output:\n${output.slice(-4000)}`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        listeners.delete(listener);
      };
      const listener = (): void => void check();
      if (check()) return;
      listeners.add(listener);
      void exited.then(() => {
        if (listeners.has(listener)) {
          cleanup();
          rejectWait(new Error(`server exited before printing ${pattern}:\n${output.slice(-4000)}`));
        }
      });
    });

  // A server that never says it is up is killed, so a failed start leaves no process (and no workers) behind.
  const started = async (): Promise<{ banner: string; apiUrl: string | undefined; consoleUrl: string | undefined }> => {
    const banner = await waitForOutput(
      /Operon HTTP on http:\/\/[^\s,]+, gRPC on [^\s,]+, metrics on http:\/\/\S+\/metrics/,
      options.timeoutMs ?? 60_000,
    );
    const withControlPlane = args.some((arg) => arg === "--control-plane" || arg === "--control-plane=true");
    const apiUrl = withControlPlane
      ? /Operon API on (\S+)\/api\/trpc/.exec(await waitForOutput(/Operon API on \S+\/api\/trpc/, 30_000))![1]
      : undefined;
    const withConsole = withControlPlane && !args.includes("--console=false");
    const consoleUrl = withConsole
      ? /Operon console on (\S+)/.exec(await waitForOutput(/Operon console on \S+/, 90_000))![1]
      : undefined;
    return { banner, apiUrl, consoleUrl };
  };
  let startup: Awaited<ReturnType<typeof started>>;
  try {
    startup = await started();
  } catch (error) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const killed = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(killed);
    }
    throw error;
  }
  const { banner, apiUrl, consoleUrl } = startup;
  const httpUrl = /HTTP on (http:\/\/[^\s,]+)/.exec(banner)![1]!;
  const grpcAddress = /gRPC on ([^\s,]+)/.exec(banner)![1]!;
  const metricsUrl = /metrics on (http:\/\/\S+\/metrics)/.exec(banner)![1]!;
  return {
    process: child,
    pid: child.pid!,
    httpUrl,
    grpcAddress,
    metricsUrl,
    dataDir,
    apiUrl,
    consoleUrl,
    output: () => output,
    waitForOutput,
    exited,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const result = await exited;
      return result.code;
    },
  };
}

/** Whether `operon serve <args>` opens the embedded database in <data-dir>/db (control plane on, no database URL). */
function usesEmbeddedControlPlane(args: string[], env: Record<string, string> | undefined): boolean {
  const controlPlane = args.some((arg) => arg === "--control-plane" || arg === "--control-plane=true");
  const databaseUrl =
    args.some((arg) => arg === "--database-url" || arg.startsWith("--database-url=")) ||
    env?.DATABASE_URL !== undefined ||
    env?.OPERON_DATABASE_URL !== undefined;
  return controlPlane && !databaseUrl;
}

/** Runs the CLI to completion (for --help, bad flags, start-up failures). */
export function runOperon(
  args: string[],
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun, rejectRun) => {
    const child = spawn(process.execPath, [OPERON_BIN, ...args], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      rejectRun(new Error(`operon ${args.join(" ")} did not exit within ${timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolveRun({ code, stdout, stderr });
    });
  });
}

/** A fresh temporary folder to build a model repository in. */
export function tempRepository(prefix = "operon-e2e-repo-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** The live child processes of a process (Linux /proc), e.g. a server's backend workers. */
export function childPids(pid: number): number[] {
  const children: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  for (const task of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim();
      if (text !== "") children.push(...text.split(/\s+/).map(Number));
    } catch {
      // the thread ended meanwhile
    }
  }
  return children;
}

/** The backend workers of a running server: pid and OPERON_WORKER_INSTANCE (e.g. "add_sub_0_1"), by instance name. */
export function workerProcesses(serverPid: number): Array<{ pid: number; instance: string }> {
  const workers: Array<{ pid: number; instance: string }> = [];
  for (const pid of childPids(serverPid)) {
    try {
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      const entry = environ.find((variable) => variable.startsWith("OPERON_WORKER_INSTANCE="));
      if (entry !== undefined) workers.push({ pid, instance: entry.slice("OPERON_WORKER_INSTANCE=".length) });
    } catch {
      // exited meanwhile
    }
  }
  return workers.sort((a, b) => a.instance.localeCompare(b.instance) || a.pid - b.pid);
}

/** True while the process exists and is not a zombie. */
export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

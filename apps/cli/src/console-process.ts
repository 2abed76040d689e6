import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "@operon/gateway/logger";
import { ProcessSupervisor } from "./process-supervisor.js";

/**
 * Runs the web console (apps/console, a built Next.js app) as a child
 * process: its server.mjs (Next.js behind a server that sets X-Forwarded-For
 * itself) on the console's address and port, proxying its /api calls to the
 * control plane API (OPERON_API_URL). A separate process keeps page
 * rendering off the gateway's event loop. A console that exits (a crash,
 * a kill) is started again with backoff (ProcessSupervisor), as workers are,
 * during start-up as after it.
 */
export const CONSOLE_DIR = fileURLToPath(new URL("../../console/", import.meta.url));

export interface ConsoleProcess {
  url: string;
  /** The console process running now (another one after a restart). */
  readonly pid: number | undefined;
  /** Ends restarts, then the console (it drains for up to 20 s). */
  stop(): Promise<void>;
}

export class ConsoleNotBuiltError extends Error {}

export async function startConsole(options: {
  address: string;
  port: number;
  apiUrl: string;
  /** The API's proxy token (RunningControlPlane.proxyToken), passed to the console's server in its environment. */
  proxyToken: string;
  /** Reverse proxies in front of the console whose X-Forwarded-For the console's server believes (--trusted-proxy). */
  trustedProxies?: readonly string[];
  logger: Logger;
  startTimeoutMs?: number;
}): Promise<ConsoleProcess> {
  if (!existsSync(join(CONSOLE_DIR, ".next", "BUILD_ID"))) {
    throw new ConsoleNotBuiltError(`the console is not built (no ${join(CONSOLE_DIR, ".next")}); run npm run build`);
  }
  const host = options.address.includes(":") ? `[${options.address}]` : options.address;
  const url = `http://${host}:${options.port}`;
  const forward = (stream: NodeJS.ReadableStream, level: "info" | "warn"): void => {
    let buffered = "";
    stream.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) options.logger[level]({ console: line.trim() }, "console");
    });
  };
  const spawnConsole = (): ChildProcess => {
    const child = spawn(
      process.execPath,
      [join(CONSOLE_DIR, "server.mjs"), "--port", String(options.port), "--hostname", options.address],
      {
        cwd: CONSOLE_DIR,
        env: {
          ...process.env,
          OPERON_API_URL: options.apiUrl,
          OPERON_PROXY_TOKEN: options.proxyToken,
          OPERON_TRUSTED_PROXIES: (options.trustedProxies ?? []).join(","),
          NEXT_TELEMETRY_DISABLED: "1",
          NODE_ENV: "production",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    forward(child.stdout!, "info");
    forward(child.stderr!, "warn");
    return child;
  };
  const supervisor = new ProcessSupervisor({
    spawn: spawnConsole,
    onUnexpectedExit: ({ code, signal }) =>
      options.logger.error(
        { code, signal },
        "the console process exited; restarting it (the gateway and the API keep serving)",
      ),
    onRestart: ({ attempt, delayMs, pid }) =>
      options.logger.warn({ attempt, delayMs, pid }, "console process restarted"),
    // The console drains its requests in flight for up to 20 s (server.mjs) before it exits.
    killAfterMs: 25_000,
  });
  try {
    await waitUntilServing(url, supervisor, options.startTimeoutMs ?? 60_000);
  } catch (error) {
    supervisor.current.kill("SIGKILL");
    await supervisor.stop();
    throw error;
  }
  return {
    url,
    get pid() {
      return supervisor.current.pid;
    },
    stop: () => supervisor.stop(),
  };
}

/**
 * Waits for the console to answer. A console process that exits meanwhile is
 * restarted by the supervisor with backoff, as after start-up (a kill
 * during start-up used to take the whole server down); start-up fails only
 * when no console answered within timeoutMs, saying how often it exited.
 */
async function waitUntilServing(url: string, supervisor: ProcessSupervisor, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${url}/sign-in`, { redirect: "manual", signal: AbortSignal.timeout(2000) });
      if (response.status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const restarts = supervisor.restarts;
  throw new Error(
    `the console did not answer at ${url} within ${timeoutMs} ms${restarts > 0 ? ` (its process exited and was restarted ${restarts} times)` : ""}`,
  );
}

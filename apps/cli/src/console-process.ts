import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "@operon/gateway/logger";

/**
 * Runs the web console (apps/console, a built Next.js app) as a child
 * process: its server.mjs (Next.js behind a server that sets X-Forwarded-For
 * itself) on the console's address and port, proxying its /api calls to the
 * control plane API (OPERON_API_URL). A separate process keeps page
 * rendering off the gateway's event loop.
 */
export const CONSOLE_DIR = fileURLToPath(new URL("../../console/", import.meta.url));

export interface ConsoleProcess {
  url: string;
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
  const child = spawn(process.execPath, [join(CONSOLE_DIR, "server.mjs"), "--port", String(options.port), "--hostname", options.address], {
    cwd: CONSOLE_DIR,
    env: { ...process.env, OPERON_API_URL: options.apiUrl, OPERON_PROXY_TOKEN: options.proxyToken, OPERON_TRUSTED_PROXIES: (options.trustedProxies ?? []).join(","), NEXT_TELEMETRY_DISABLED: "1", NODE_ENV: "production" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const host = options.address.includes(":") ? `[${options.address}]` : options.address;
  const url = `http://${host}:${options.port}`;
  let stopping = false;
  const forward = (stream: NodeJS.ReadableStream, level: "info" | "warn"): void => {
    let buffered = "";
    stream.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) options.logger[level]({ console: line.trim() }, "console");
    });
  };
  forward(child.stdout!, "info");
  forward(child.stderr!, "warn");
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.once("exit", (code, signal) => {
    if (!stopping) options.logger.error({ code, signal }, "the console process exited; the gateway and the API keep serving");
  });
  try {
    await waitUntilServing(url, child, options.startTimeoutMs ?? 60_000);
  } catch (error) {
    stopping = true;
    child.kill("SIGKILL");
    throw error;
  }
  return {
    url,
    async stop() {
      if (stopping) return exited;
      stopping = true;
      child.kill("SIGTERM");
      // The console drains its requests in flight for up to 20 s (server.mjs) before it exits.
      const force = setTimeout(() => child.kill("SIGKILL"), 25_000);
      await exited;
      clearTimeout(force);
    },
  };
}

async function waitUntilServing(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the console process exited during start-up (${child.exitCode ?? child.signalCode})`);
    try {
      const response = await fetch(`${url}/sign-in`, { redirect: "manual", signal: AbortSignal.timeout(2000) });
      if (response.status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the console did not answer at ${url} within ${timeoutMs} ms`);
}

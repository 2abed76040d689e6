import { appendFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startOperonWithConsole, type RunningOperonWithConsole } from "./operon-with-console.js";

/**
 * The shared systems of the browser project (see README.md here). Runs in
 * vitest's main process (global-setup.ts): spec files ask it over a small
 * local HTTP endpoint for a running system with their flags, and get the
 * same one as every other spec that asked with the same flags. A system
 * starts on the first request for its flags, so a run without shared specs
 * starts nothing, and stops when the whole browser project ends.
 */

/** What a spec asks for: the `operon serve` flags and environment beyond the harness's own (startOperonWithConsole). */
export interface SharedSystemRequest {
  extraArgs?: string[];
  env?: Record<string, string>;
}

/** What a spec gets: where the shared system listens and how to reach it (all of it crosses a process boundary). */
export interface SharedSystemDescriptor {
  httpUrl: string;
  grpcAddress: string;
  metricsUrl: string;
  dataDir: string;
  apiUrl: string | undefined;
  consoleUrl: string;
  pid: number;
  /** The server's whole output so far, appended as it prints (RunningOperon.output() of a shared system reads it). */
  logFile: string;
  /** The admin the system was started with; specs create their own admin through it (each spec its own email). */
  bootstrapAdmin: { email: string; password: string };
}

export const BOOTSTRAP_ADMIN = {
  email: "shared-bootstrap-admin@example.com",
  password: "the shared systems' bootstrap passphrase",
};

export interface SystemBroker {
  url: string;
  stop(): Promise<void>;
}

/** The flags a system is shared by: the same flags in the same order and the same environment. */
export function sharedSystemKey(request: SharedSystemRequest): string {
  const env = Object.entries(request.env ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return JSON.stringify({ extraArgs: request.extraArgs ?? [], env });
}

export function parseSharedSystemRequest(body: string): SharedSystemRequest {
  const value: unknown = JSON.parse(body);
  if (typeof value !== "object" || value === null) throw new Error("the request is not a JSON object");
  const { extraArgs, env } = value as Record<string, unknown>;
  if (extraArgs !== undefined && !(Array.isArray(extraArgs) && extraArgs.every((arg) => typeof arg === "string")))
    throw new Error("extraArgs must be an array of strings");
  if (
    env !== undefined &&
    (typeof env !== "object" || env === null || Object.values(env).some((entry) => typeof entry !== "string"))
  )
    throw new Error("env must be an object of strings");
  return {
    ...(extraArgs !== undefined ? { extraArgs: extraArgs as string[] } : {}),
    ...(env !== undefined ? { env: env as Record<string, string> } : {}),
  };
}

interface SharedSystem {
  operon: RunningOperonWithConsole;
  descriptor: SharedSystemDescriptor;
}

export async function startSystemBroker(): Promise<SystemBroker> {
  const logDir = mkdtempSync(join(tmpdir(), "operon-e2e-shared-"));
  const systems = new Map<string, Promise<SharedSystem>>();
  let started = 0;

  const startShared = async (request: SharedSystemRequest): Promise<SharedSystem> => {
    const operon = await startOperonWithConsole({ ...request, admin: BOOTSTRAP_ADMIN });
    const logFile = join(logDir, `system-${++started}.log`);
    // The output so far, then every chunk as it comes (in the same tick: nothing is lost in between).
    writeFileSync(logFile, operon.output());
    const append = (chunk: Buffer): void => appendFileSync(logFile, chunk);
    operon.process.stdout!.on("data", append);
    operon.process.stderr!.on("data", append);
    return {
      operon,
      descriptor: {
        httpUrl: operon.httpUrl,
        grpcAddress: operon.grpcAddress,
        metricsUrl: operon.metricsUrl,
        dataDir: operon.dataDir,
        apiUrl: operon.apiUrl,
        consoleUrl: operon.consoleUrl,
        pid: operon.pid,
        logFile,
        bootstrapAdmin: BOOTSTRAP_ADMIN,
      },
    };
  };

  const systemFor = async (request: SharedSystemRequest): Promise<SharedSystem> => {
    const key = sharedSystemKey(request);
    const existing = systems.get(key);
    if (existing !== undefined) {
      const system = await existing.catch(() => undefined);
      // A system that exited (crashed, killed) is started again for the next spec rather than failing every later one.
      if (system !== undefined && system.operon.process.exitCode === null && system.operon.process.signalCode === null)
        return system;
    }
    const starting = startShared(request);
    systems.set(key, starting);
    return starting;
  };

  const server: Server = createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/system") {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "POST /system only" }));
      return;
    }
    void readBody(req)
      .then((body) => systemFor(parseSharedSystemRequest(body)))
      .then(
        (system) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(system.descriptor)),
        (error: unknown) =>
          res
            .writeHead(500, { "content-type": "application/json" })
            .end(JSON.stringify({ error: (error as Error).message ?? String(error) })),
      );
  });
  // No timeout: a request waits while its system starts (the spec's hook timeout bounds it).
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      const running = await Promise.all([...systems.values()].map((system) => system.catch(() => undefined)));
      await Promise.all(running.map((system) => system?.operon.stop()));
    },
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => resolve(body));
    req.on("error", reject);
  });
}

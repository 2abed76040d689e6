import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { pipeline } from "node:stream/promises";
import { AppError } from "../app-error.js";
import { createHttpContext, type ApiContext } from "../context.js";
import { hasRole } from "../trpc.js";
import { appRouter } from "../root.js";
import type { ApiServices } from "../services.js";

/**
 * Serves the control plane API over HTTP: tRPC under /api/trpc (what the
 * console's server forwards browser calls to) and /api/health.
 *
 * Every response to a caller without a CSRF cookie sets one (random,
 * SameSite=Strict, readable by the console's script), which the console then
 * echoes in X-CSRF-Token on mutations: the double-submit pattern.
 */
export interface ApiServerOptions {
  host: string;
  /** 0 = a free port. */
  port: number;
  /** Largest request body (default 8 MiB: one upload chunk with its base64 overhead and some room). */
  maxBodyBytes?: number;
  /**
   * The secret the console's server sends in X-Operon-Proxy-Token: only
   * requests carrying it have their X-Forwarded-For believed. Unset: never.
   */
  proxyToken?: string;
  /**
   * The key CSRF tokens are bound to sessions with (csrfTokenFor). Default:
   * random per process; after a restart a signed-in browser gets its new
   * token with its next answer.
   */
  csrfSecret?: Buffer;
}

export interface ApiServer {
  port: number;
  url: string;
  /**
   * Stops taking requests and waits for those in flight (an upload.finish
   * that is committing a model answers its client) up to `graceMs`
   * (default 25 s), then closes what is left. Idempotent.
   */
  stop(graceMs?: number): Promise<void>;
}

/** How long stop() waits for requests in flight by default. */
export const API_DRAIN_MS = 25_000;

export const API_BASE_PATH = "/api/trpc";

/** Most calls one batched request may carry (the console batches at most CONSOLE_MAX_BATCH_ITEMS). */
export const MAX_BATCH_CALLS = 20;

/**
 * Procedures that check a password or a setup token: each must arrive in its
 * own request, so that the sign-in limit counts every attempt on its own and
 * one request cannot start a crowd of Argon2 computations.
 */
export const UNBATCHABLE_PROCEDURES: ReadonlySet<string> = new Set([
  "auth.signIn",
  "auth.completeSetup",
  "auth.changePassword",
]);

/** Why a batched tRPC request is refused before any of its calls runs, or undefined when it may run. */
export function batchProblem(path: string, query: string): string | undefined {
  const params = new URLSearchParams(query);
  const batch = params.get("batch");
  if (batch === null || batch === "0" || batch === "false") return undefined;
  const procedures = decodeURIComponent(path.slice(API_BASE_PATH.length + 1)).split(",");
  if (procedures.length > MAX_BATCH_CALLS)
    return `a batch may carry at most ${MAX_BATCH_CALLS} calls; this one has ${procedures.length}`;
  const alone = procedures.find((procedure) => UNBATCHABLE_PROCEDURES.has(procedure));
  if (alone !== undefined && procedures.length > 1)
    return `${alone} checks a password and must be sent on its own, not in a batch`;
  return undefined;
}

/** A done batch job's results: GET /api/jobs/<id>/result.parquet, for its owner or an admin (session cookie). */
export const JOB_RESULT_PATH = /^\/api\/jobs\/([0-9a-f-]{36})\/result\.parquet$/;

async function serveJobResult(
  services: ApiServices,
  ctx: ApiContext,
  id: string,
  res: http.ServerResponse,
): Promise<void> {
  const fail = (status: number, message: string) =>
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ error: message }));
  if (ctx.user === null) return void fail(401, "sign in first");
  if (!hasRole(ctx.user, "ENGINEER")) return void fail(403, "this needs the engineer role");
  let file: string;
  try {
    file = await services.batchJobs.resultFile(ctx.user, id);
  } catch (error) {
    if (error instanceof AppError) return void fail(APP_ERROR_HTTP_STATUS[error.code] ?? 400, error.message);
    throw error;
  }
  const info = await stat(file).catch(() => undefined);
  if (info === undefined) return void fail(404, `job ${id} has no results file`);
  res.writeHead(200, {
    "content-type": "application/vnd.apache.parquet",
    "content-length": String(info.size),
    "content-disposition": `attachment; filename="job-${id}.parquet"`,
  });
  await pipeline(createReadStream(file), res).catch(() => undefined);
}

const APP_ERROR_HTTP_STATUS: Partial<Record<string, number>> = { NOT_FOUND: 404, CONFLICT: 409, FORBIDDEN: 403 };

export async function startApiServer(services: ApiServices, options: ApiServerOptions): Promise<ApiServer> {
  const contextOptions = { proxyToken: options.proxyToken, csrfSecret: options.csrfSecret ?? randomBytes(32) };
  const trpcHandler = createHTTPHandler({
    router: appRouter,
    basePath: `${API_BASE_PATH}/`,
    maxBodySize: options.maxBodyBytes ?? 8 * 1024 * 1024,
    maxBatchSize: MAX_BATCH_CALLS,
    createContext: ({ req, res }) => createHttpContext(services, req, res, contextOptions),
    responseMeta({ errors }) {
      // Every 429 says when to come back: the limiter's wait, else one second (tRPC's own TOO_MANY_REQUESTS).
      const retry = errors
        .map((error) => (error.cause as { retryAfterSecs?: number } | undefined)?.retryAfterSecs)
        .find((secs) => secs !== undefined);
      const tooMany = errors.some((error) => error.code === "TOO_MANY_REQUESTS");
      return retry !== undefined || tooMany ? { headers: { "retry-after": String(retry ?? 1) } } : {};
    },
  });

  // Requests in flight: stop() waits for them; once stopping, answers ask the client to close its connection.
  const inflight = new Set<http.ServerResponse>();
  let draining = false;
  const server = http.createServer((req, res) => {
    inflight.add(res);
    res.once("close", () => {
      inflight.delete(res);
      if (draining && inflight.size === 0) server.closeAllConnections();
    });
    if (draining) res.setHeader("connection", "close");
    void serve(req, res);
  });
  const serve = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (path === "/api/health") {
      // Also hands out the CSRF cookie (the console asks here when it has none): the context sets it.
      try {
        await createHttpContext(services, req, res, contextOptions);
      } catch {
        // the health answer does not depend on the session store
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true }));
      return;
    }
    const download = JOB_RESULT_PATH.exec(path);
    if (download !== null && req.method === "GET") {
      await serveJobResult(services, await createHttpContext(services, req, res, contextOptions), download[1]!, res);
      return;
    }
    if (path.startsWith(`${API_BASE_PATH}/`)) {
      const problem = batchProblem(path, (req.url ?? "").slice(path.length + 1));
      if (problem !== undefined) {
        // tRPC's own error shape, one entry per call, so batching clients show the message.
        const calls = Math.min(MAX_BATCH_CALLS + 1, decodeURIComponent(path).split(",").length);
        const error = {
          message: problem,
          code: -32600,
          data: { code: "BAD_REQUEST", httpStatus: 400, appCode: "VALIDATION_FAILED", fieldErrors: [] },
        };
        res
          .writeHead(400, { "content-type": "application/json" })
          .end(JSON.stringify(Array.from({ length: calls }, () => ({ error }))));
        return;
      }
      trpcHandler(req, res);
      return;
    }
    res
      .writeHead(404, { "content-type": "application/json" })
      .end(JSON.stringify({ error: `no API endpoint at '${path}'` }));
  };
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let stopped: Promise<void> | undefined;
  return {
    port,
    url: `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`,
    stop(graceMs = API_DRAIN_MS) {
      stopped ??= new Promise<void>((resolve) => {
        draining = true;
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
        for (const res of inflight) if (!res.headersSent) res.setHeader("connection", "close");
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        force.unref();
        if (inflight.size === 0) server.closeAllConnections();
      });
      return stopped;
    },
  };
}

import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { parseCookie, stringifySetCookie } from "cookie";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { createHttpContext, CSRF_COOKIE } from "../context.js";
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
}

export interface ApiServer {
  port: number;
  url: string;
  stop(): Promise<void>;
}

export const API_BASE_PATH = "/api/trpc";

/** Most calls one batched request may carry (the console batches at most CONSOLE_MAX_BATCH_ITEMS). */
export const MAX_BATCH_CALLS = 20;

/**
 * Procedures that check a password or a setup token: each must arrive in its
 * own request, so that the sign-in limit counts every attempt on its own and
 * one request cannot start a crowd of Argon2 computations.
 */
export const UNBATCHABLE_PROCEDURES: ReadonlySet<string> = new Set(["auth.signIn", "auth.completeSetup", "auth.changePassword"]);

/** Why a batched tRPC request is refused before any of its calls runs, or undefined when it may run. */
export function batchProblem(path: string, query: string): string | undefined {
  const params = new URLSearchParams(query);
  const batch = params.get("batch");
  if (batch === null || batch === "0" || batch === "false") return undefined;
  const procedures = decodeURIComponent(path.slice(API_BASE_PATH.length + 1)).split(",");
  if (procedures.length > MAX_BATCH_CALLS) return `a batch may carry at most ${MAX_BATCH_CALLS} calls; this one has ${procedures.length}`;
  const alone = procedures.find((procedure) => UNBATCHABLE_PROCEDURES.has(procedure));
  if (alone !== undefined && procedures.length > 1) return `${alone} checks a password and must be sent on its own, not in a batch`;
  return undefined;
}

export async function startApiServer(services: ApiServices, options: ApiServerOptions): Promise<ApiServer> {
  const trpcHandler = createHTTPHandler({
    router: appRouter,
    basePath: `${API_BASE_PATH}/`,
    maxBodySize: options.maxBodyBytes ?? 8 * 1024 * 1024,
    maxBatchSize: MAX_BATCH_CALLS,
    createContext: ({ req, res }) => createHttpContext(services, req, res, options.proxyToken),
    responseMeta({ errors }) {
      const retry = errors.map((error) => (error.cause as { retryAfterSecs?: number } | undefined)?.retryAfterSecs).find((secs) => secs !== undefined);
      return retry !== undefined ? { headers: { "retry-after": String(retry) } } : {};
    },
  });

  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (!parseCookie(req.headers.cookie ?? "")[CSRF_COOKIE]) {
      res.appendHeader(
        "set-cookie",
        stringifySetCookie({ name: CSRF_COOKIE, value: randomBytes(24).toString("base64url"), path: "/", sameSite: "strict", secure: services.options.secureCookies }),
      );
    }
    if (path === "/api/health") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true }));
      return;
    }
    if (path.startsWith(`${API_BASE_PATH}/`)) {
      const problem = batchProblem(path, (req.url ?? "").slice(path.length + 1));
      if (problem !== undefined) {
        // tRPC's own error shape, one entry per call, so batching clients show the message.
        const calls = Math.min(MAX_BATCH_CALLS + 1, decodeURIComponent(path).split(",").length);
        const error = { message: problem, code: -32600, data: { code: "BAD_REQUEST", httpStatus: 400, appCode: "VALIDATION_FAILED", fieldErrors: [] } };
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify(Array.from({ length: calls }, () => ({ error }))));
        return;
      }
      trpcHandler(req, res);
      return;
    }
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: `no API endpoint at '${path}'` }));
  });
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
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopped;
    },
  };
}

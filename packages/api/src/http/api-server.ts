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

export async function startApiServer(services: ApiServices, options: ApiServerOptions): Promise<ApiServer> {
  const trpcHandler = createHTTPHandler({
    router: appRouter,
    basePath: `${API_BASE_PATH}/`,
    maxBodySize: options.maxBodyBytes ?? 8 * 1024 * 1024,
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

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { asOperonError, httpStatusOf } from "@operon/protocol/errors";
import type { GatewayMetrics } from "./metrics.js";

/** Serves Prometheus text at GET /metrics on the metrics port (Triton's :8002). */
export async function startMetricsServer(
  metrics: GatewayMetrics,
  options: {
    host: string;
    port: number;
    /**
     * --metrics-require-key: checks the request's Authorization value (undefined = none sent) and
     * throws an OperonError (UNAUTHENTICATED, PERMISSION_DENIED) to refuse it; undefined = open, as in Triton.
     */
    authorize?: (authorizationHeader: string | undefined) => void;
  },
): Promise<{ port: number; stop(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (options.authorize !== undefined) {
      try {
        options.authorize(request.headers.authorization);
      } catch (error) {
        const failure = asOperonError(error);
        const status = httpStatusOf(failure.kind);
        response
          .writeHead(status, {
            "content-type": "application/json",
            ...(status === 401 ? { "www-authenticate": "Bearer" } : {}),
          })
          .end(JSON.stringify({ error: failure.message }));
        return;
      }
    }
    if (path !== "/metrics") {
      response
        .writeHead(404, { "content-type": "application/json" })
        .end(JSON.stringify({ error: `no metrics at '${path}'; use /metrics` }));
      return;
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      response
        .writeHead(405, { "content-type": "application/json", allow: "GET" })
        .end(JSON.stringify({ error: "use GET /metrics" }));
      return;
    }
    metrics.exposition().then(
      (text) => response.writeHead(200, { "content-type": metrics.registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500).end(String(error)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

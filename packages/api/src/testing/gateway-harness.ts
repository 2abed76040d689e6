import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { createLogger } from "@operon/gateway/logger";
import { startOperonServer, type OperonServer, type OperonServerOptions } from "@operon/gateway/server";

/**
 * A real gateway (HTTP + metrics, real worker processes) on free loopback
 * ports, for API tests that drive it through its HTTP endpoints as the
 * control plane does in production. Test-only: the API package itself never
 * imports the gateway. Needs the built worker (npm run build).
 */
export interface TestGateway {
  server: OperonServer;
  httpUrl: string;
  metricsUrl: string;
  /** Everything the gateway logged (JSON lines). */
  logs(): string;
  stop(): Promise<void>;
}

export async function startTestGateway(
  options: Partial<OperonServerOptions> & { modelRepositories: string[] },
): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), "operon-api-gw-"));
  let logs = "";
  const logger = createLogger({
    destination: new Writable({
      write(chunk, _encoding, callback) {
        logs += String(chunk);
        callback();
      },
    }),
  });
  const server = await startOperonServer({
    httpAddress: "127.0.0.1",
    httpPort: 0,
    grpcAddress: "127.0.0.1",
    grpcPort: 0,
    metricsAddress: "127.0.0.1",
    metricsPort: 0,
    allowHttp: true,
    allowGrpc: false,
    allowMetrics: true,
    modelControlMode: "explicit",
    loadModels: ["*"],
    repositoryPollSecs: 0,
    strictModelConfig: false,
    strictReadiness: false,
    exitOnError: false,
    exitTimeoutSecs: 5,
    dataDir,
    maxUploadBytes: 256 * 1024 * 1024,
    httpMaxBodyBytes: 512 * 1024 * 1024,
    defaultMaxBatchSize: 4,
    workerEntry: fileURLToPath(import.meta.resolve("@operon/worker/main")),
    logger,
    ...options,
  });
  return {
    server,
    httpUrl: `http://127.0.0.1:${server.httpPort}`,
    metricsUrl: `http://127.0.0.1:${server.metricsPort}/metrics`,
    logs: () => logs,
    async stop() {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

import { type IncomingMessage, type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A stand-in KServe v2 HTTP server for unit tests of the perf client and
 * runPerf: one model "toy" (FP32 [-1, 4], max_batch_size 8), statistics
 * that count every inference, and every request it received kept for
 * inspection. The real server is exercised in e2e/perf-cli.test.ts.
 */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

export interface FakeKserveServer {
  url: string;
  received: ReceivedRequest[];
  /** Makes infer answer this HTTP status with {"error": message}. */
  failInfer(status: number, message: string): void;
  close(): Promise<void>;
}

export async function startFakeKserveServer(options: { inferDelayMs?: number } = {}): Promise<FakeKserveServer> {
  const received: ReceivedRequest[] = [];
  let failure: { status: number; message: string } | undefined;
  let successes = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const path = req.url ?? "";
      received.push({ method: req.method ?? "", path, headers: req.headers, body: Buffer.concat(chunks) });
      const json = (status: number, value: unknown) => {
        const text = JSON.stringify(value);
        res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
        res.end(text);
      };
      const model = /^\/v2\/models\/([^/]+)(?:\/versions\/([^/]+))?(\/config|\/stats|\/infer)?$/.exec(path);
      if (model === null || model[1] !== "toy") return json(404, { error: `Request for unknown model: '${model?.[1] ?? path}' is not found` });
      switch (model[3]) {
        case undefined:
          return json(200, { name: "toy", versions: ["1", "2"], platform: "fake", inputs: [{ name: "X", datatype: "FP32", shape: [-1, 4] }], outputs: [] });
        case "/config":
          return json(200, { name: "toy", max_batch_size: 8 });
        case "/stats": {
          const d = (ns: number) => ({ count: successes, ns: successes * ns });
          return json(200, {
            model_stats: [
              {
                name: "toy",
                version: "2",
                inference_count: successes,
                execution_count: successes,
                inference_stats: { success: d(5000), fail: d(0), queue: d(1000), compute_input: d(2000), compute_infer: d(3000), compute_output: d(4000) },
                batch_stats: [{ batch_size: 1, compute_input: d(2000), compute_infer: d(3000), compute_output: d(4000) }],
              },
            ],
          });
        }
        default: {
          const answer = () => {
            if (failure !== undefined) return json(failure.status, { error: failure.message });
            successes += 1;
            json(200, { model_name: "toy", model_version: "2", outputs: [] });
          };
          if (options.inferDelayMs) setTimeout(answer, options.inferDelayMs);
          else answer();
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `127.0.0.1:${port}`,
    received,
    failInfer(status, message) {
      failure = { status, message };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

import { PERF_TRAFFIC_PARAMETER, PERF_TRAFFIC_VALUE } from "@operon/protocol/perf-traffic";
import * as http from "node:http";
import type { ModelMetadata, ModelStatistics } from "@operon/protocol/inference";
import { bufferToJsonText } from "@operon/protocol/json-tensor-codec";
import {
  DEFAULT_CONTROL_TIMEOUT_MS,
  type InferenceClient,
  type InferenceClientOptions,
  type ModelConfigSummary,
  type ServerAddress,
  isConnectError,
  parseServerAddress,
} from "./inference-client.js";
import type { PreparedInputSet } from "./input-data.js";
import { PerfError, messageOf } from "./perf-error.js";

interface PreparedHttpRequest {
  options: http.RequestOptions;
  body: Buffer;
}

/**
 * KServe v2 over HTTP/1.1 with keep-alive connections. Each prepared
 * request is one complete body: with binaryData (the default) a JSON
 * header plus the raw tensor bytes (Triton's binary_tensor_data extension,
 * Inference-Header-Content-Length) and binary outputs asked for with
 * `binary_data_output`; otherwise plain JSON data encoded once up front.
 * Responses are drained but not decoded.
 */
export class HttpInferenceClient implements InferenceClient {
  private readonly address: ServerAddress;
  private readonly baseUrl: string;
  private readonly modelPath: string;
  private readonly agent: http.Agent;
  private readonly controlAgent: http.Agent;
  private readonly prepared: PreparedHttpRequest[];
  private readonly controlTimeoutMs: number;
  private readonly description: string;
  private next = 0;
  private closed = false;

  constructor(private readonly options: InferenceClientOptions) {
    this.address = parseServerAddress(options.url, "http");
    this.baseUrl = `http://${this.address.target}`;
    const version = options.version ?? "";
    this.modelPath = `/v2/models/${encodeURIComponent(options.model)}${version === "" ? "" : `/versions/${encodeURIComponent(version)}`}`;
    this.description = `model '${options.model}'${version === "" ? "" : ` version ${version}`}`;
    this.controlTimeoutMs = options.controlTimeoutMs ?? DEFAULT_CONTROL_TIMEOUT_MS;
    // One socket per in-flight request: a pool smaller than the concurrency would queue requests inside the client.
    this.agent = new http.Agent({ keepAlive: true, maxSockets: options.maxConnections ?? Infinity });
    // Metadata and statistics calls use their own socket, never one the load is waiting for.
    this.controlAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const binary = options.binaryData ?? true;
    this.prepared = (options.inputSets ?? []).map((set) => this.prepare(set, binary));
  }

  infer(): Promise<void> {
    const prepared = this.prepared[this.next];
    if (prepared === undefined) return Promise.reject(new Error("no inference request was prepared for this client"));
    this.next = this.next + 1 === this.prepared.length ? 0 : this.next + 1;
    return new Promise<void>((resolve, reject) => {
      const request = http.request(prepared.options, (response) => {
        if (response.statusCode === 200) {
          response.on("end", () => resolve());
          response.on("close", () => {
            if (!response.complete) reject(new Error("the connection closed before the response was complete"));
          });
          response.on("error", reject);
          response.resume();
          return;
        }
        readBody(response).then((body) => reject(new Error(statusMessage(response.statusCode, body))), reject);
      });
      request.on("error", (error) => reject(new Error(messageOf(error), { cause: error })));
      request.end(prepared.body);
    });
  }

  async modelMetadata(): Promise<ModelMetadata> {
    const metadata = (await this.getModelJson("")) as Partial<ModelMetadata>;
    if (!Array.isArray(metadata.inputs))
      throw new PerfError("SERVER_ERROR", `${this.baseUrl} answered model metadata without 'inputs'`);
    return {
      name: String(metadata.name ?? this.options.model),
      versions: Array.isArray(metadata.versions) ? metadata.versions.map(String) : [],
      platform: String(metadata.platform ?? ""),
      inputs: metadata.inputs.map((input) => ({
        name: input.name,
        datatype: input.datatype,
        shape: input.shape.map(Number),
      })),
      outputs: (metadata.outputs ?? []).map((output) => ({
        name: output.name,
        datatype: output.datatype,
        shape: output.shape.map(Number),
      })),
    };
  }

  async modelConfig(): Promise<ModelConfigSummary> {
    const config = (await this.getModelJson("/config")) as { max_batch_size?: unknown };
    return { maxBatchSize: Number(config.max_batch_size ?? 0) || 0 };
  }

  async modelStatistics(): Promise<ModelStatistics[]> {
    const stats = (await this.getModelJson("/stats")) as { model_stats?: ModelStatistics[] };
    return stats.model_stats ?? [];
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.agent.destroy();
    this.controlAgent.destroy();
  }

  private prepare(set: PreparedInputSet, binary: boolean): PreparedHttpRequest {
    let body: Buffer;
    const headers: http.OutgoingHttpHeaders = { ...this.options.headers };
    if (binary) {
      const header = Buffer.from(
        JSON.stringify({
          inputs: set.map((input) => ({
            name: input.name,
            datatype: input.datatype,
            shape: input.shape,
            parameters: { binary_data_size: input.data.length },
          })),
          parameters: { binary_data_output: true, [PERF_TRAFFIC_PARAMETER]: PERF_TRAFFIC_VALUE },
        }),
        "utf8",
      );
      body = Buffer.concat([header, ...set.map((input) => input.data)]);
      headers["content-type"] = "application/octet-stream";
      headers["inference-header-content-length"] = header.length;
    } else {
      const inputs = set.map((input) => {
        if (input.datatype === "FP16" || input.datatype === "BF16") {
          throw new PerfError(
            "BAD_OPTIONS",
            `input '${input.name}' is ${input.datatype}, which has no JSON form; drop --no-binary`,
          );
        }
        return `{"name":${JSON.stringify(input.name)},"datatype":"${input.datatype}","shape":${JSON.stringify(input.shape)},"data":${bufferToJsonText(input)}}`;
      });
      body = Buffer.from(`{"inputs":[${inputs.join(",")}],"parameters":${PERF_TRAFFIC_PARAMETERS_JSON}}`, "utf8");
      headers["content-type"] = "application/json";
    }
    headers["content-length"] = body.length;
    return {
      body,
      options: {
        agent: this.agent,
        host: this.address.host,
        port: this.address.port,
        method: "POST",
        path: `${this.modelPath}/infer`,
        headers,
      },
    };
  }

  /** GET <model path><suffix> as JSON, with errors mapped to PerfError codes. */
  private getModelJson(suffix: string): Promise<unknown> {
    const path = `${this.modelPath}${suffix}`;
    return new Promise<unknown>((resolve, reject) => {
      const request = http.get(
        {
          agent: this.controlAgent,
          host: this.address.host,
          port: this.address.port,
          path,
          headers: { ...this.options.headers, accept: "application/json" },
        },
        (response) => {
          readBody(response).then((body) => {
            const status = response.statusCode ?? 0;
            if (status === 404) {
              reject(
                new PerfError(
                  "MODEL_NOT_FOUND",
                  `${this.description} is not available at ${this.baseUrl}: ${errorText(body)}`,
                ),
              );
            } else if (status !== 200) {
              reject(
                new PerfError("SERVER_ERROR", `GET ${path} at ${this.baseUrl} failed: ${statusMessage(status, body)}`),
              );
            } else {
              try {
                resolve(JSON.parse(body.toString("utf8")));
              } catch (error) {
                reject(
                  new PerfError("SERVER_ERROR", `GET ${path} at ${this.baseUrl} did not answer JSON`, { cause: error }),
                );
              }
            }
          }, reject);
        },
      );
      request.setTimeout(this.controlTimeoutMs, () => {
        request.destroy(
          new PerfError(
            "UNREACHABLE",
            `the server at ${this.baseUrl} did not answer within ${this.controlTimeoutMs} ms`,
          ),
        );
      });
      request.on("error", (error) => {
        if (error instanceof PerfError) reject(error);
        else if (isConnectError(error)) {
          reject(
            new PerfError("UNREACHABLE", `cannot connect to the server at ${this.baseUrl}: ${messageOf(error)}`, {
              cause: error,
            }),
          );
        } else {
          reject(
            new PerfError("UNREACHABLE", `cannot talk KServe v2 HTTP with ${this.baseUrl}: ${messageOf(error)}`, {
              cause: error,
            }),
          );
        }
      });
    });
  }
}

function readBody(response: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on("data", (chunk: Buffer) => chunks.push(chunk));
    response.on("end", () => resolve(Buffer.concat(chunks)));
    response.on("error", reject);
  });
}

/** The server's `{"error": "..."}` message, or the body's start. */
function errorText(body: Buffer): string {
  const text = body.toString("utf8");
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed.error === "string") return parsed.error;
  } catch {
    // not JSON: show the text itself
  }
  return text.length > 200 ? `${text.slice(0, 200)}...` : text || "(empty body)";
}

function statusMessage(status: number | undefined, body: Buffer): string {
  return `HTTP ${status ?? "?"}: ${errorText(body)}`;
}

/** Perf traffic is not user traffic: every request carries the tag the gateway counts apart (perf-traffic.ts). */
const PERF_TRAFFIC_PARAMETERS_JSON = JSON.stringify({ [PERF_TRAFFIC_PARAMETER]: PERF_TRAFFIC_VALUE });

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
import type { SharedMemoryWindow } from "./inference-client.js";
import { PerfError, messageOf } from "./perf-error.js";
import type { SequenceFlags } from "./sequence-driver.js";

interface PreparedHttpRequest {
  options: http.RequestOptions;
  body: Buffer;
  /**
   * Byte offset just inside the request's top-level `parameters` object
   * (never empty: it carries the perf-traffic tag), where a sequence
   * request's controls are spliced in without encoding the body again.
   */
  parametersAt: number;
  /** Binary bodies: the JSON header's length, which a splice grows. */
  headerLength?: number;
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
  /** The top-level parameters of every inference: the perf-traffic tag, and the priority when one is asked for. */
  private readonly requestParameters: Record<string, string | number>;
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
    // Perf traffic is not user traffic: the gateway counts it apart (perf-traffic.ts). A priority rides along.
    this.requestParameters = {
      [PERF_TRAFFIC_PARAMETER]: PERF_TRAFFIC_VALUE,
      ...(options.priority !== undefined ? { priority: options.priority } : {}),
    };
    const binary = options.binaryData ?? true;
    const shm = options.sharedMemory;
    this.prepared = (options.inputSets ?? []).map((set, i) =>
      shm === undefined ? this.prepare(set, binary) : this.prepareSharedMemory(set, shm.inputs[i]!, shm.outputs),
    );
  }

  infer(sequence?: SequenceFlags): Promise<void> {
    const next = this.prepared[this.next];
    if (next === undefined) return Promise.reject(new Error("no inference request was prepared for this client"));
    this.next = this.next + 1 === this.prepared.length ? 0 : this.next + 1;
    const prepared = sequence === undefined ? next : withSequence(next, sequence);
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
    const config = (await this.getModelJson("/config")) as {
      max_batch_size?: unknown;
      sequence_batching?: unknown;
      model_transaction_policy?: { decoupled?: unknown } | null;
      response_cache?: { enable?: unknown } | null;
    };
    return {
      maxBatchSize: Number(config.max_batch_size ?? 0) || 0,
      sequenceBatching: typeof config.sequence_batching === "object" && config.sequence_batching !== null,
      decoupled: config.model_transaction_policy?.decoupled === true,
      responseCache: config.response_cache?.enable === true,
    };
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

  /** A JSON request whose tensors are all windows of registered shared-memory regions. */
  private prepareSharedMemory(
    set: PreparedInputSet,
    windows: readonly SharedMemoryWindow[],
    outputs: ReadonlyArray<SharedMemoryWindow & { name: string }>,
  ): PreparedHttpRequest {
    const body = Buffer.from(
      JSON.stringify({
        inputs: set.map((input, i) => ({
          name: input.name,
          datatype: input.datatype,
          shape: input.shape,
          parameters: windowParameters(windows[i]!),
        })),
        outputs: outputs.map((output) => ({ name: output.name, parameters: windowParameters(output) })),
        parameters: this.requestParameters,
      }),
      "utf8",
    );
    return {
      body,
      parametersAt: parametersOffset(body),
      options: {
        agent: this.agent,
        host: this.address.host,
        port: this.address.port,
        method: "POST",
        path: `${this.modelPath}/infer`,
        headers: { ...this.options.headers, "content-type": "application/json", "content-length": body.length },
      },
    };
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
          parameters: { binary_data_output: true, ...this.requestParameters },
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
      body = Buffer.from(
        `{"inputs":[${inputs.join(",")}],"parameters":${JSON.stringify(this.requestParameters)}}`,
        "utf8",
      );
      headers["content-type"] = "application/json";
    }
    headers["content-length"] = body.length;
    const headerLength = headers["inference-header-content-length"] as number | undefined;
    return {
      body,
      parametersAt: parametersOffset(body.subarray(0, headerLength ?? body.length)),
      ...(headerLength !== undefined ? { headerLength } : {}),
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

  async registerSystemSharedMemory(name: string, key: string, byteSize: number): Promise<void> {
    await this.controlJson("POST", `/v2/systemsharedmemory/region/${encodeURIComponent(name)}/register`, {
      key,
      offset: 0,
      byte_size: byteSize,
    });
  }

  async unregisterSystemSharedMemory(name: string): Promise<void> {
    await this.controlJson("POST", `/v2/systemsharedmemory/region/${encodeURIComponent(name)}/unregister`, {});
  }

  /** GET <model path><suffix> as JSON, with errors mapped to PerfError codes. */
  private getModelJson(suffix: string): Promise<unknown> {
    return this.controlJson("GET", `${this.modelPath}${suffix}`);
  }

  /** A control call (JSON in and out; an empty answer is undefined), with errors mapped to PerfError codes. */
  private controlJson(method: "GET" | "POST", path: string, payload?: unknown): Promise<unknown> {
    const data = payload === undefined ? undefined : Buffer.from(JSON.stringify(payload), "utf8");
    return new Promise<unknown>((resolve, reject) => {
      const request = http.request(
        {
          agent: this.controlAgent,
          host: this.address.host,
          port: this.address.port,
          method,
          path,
          headers: {
            ...this.options.headers,
            accept: "application/json",
            ...(data !== undefined ? { "content-type": "application/json", "content-length": data.length } : {}),
          },
        },
        (response) => {
          readBody(response).then((body) => {
            const status = response.statusCode ?? 0;
            if (status === 404 && path.startsWith(this.modelPath)) {
              reject(
                new PerfError(
                  "MODEL_NOT_FOUND",
                  `${this.description} is not available at ${this.baseUrl}: ${errorText(body)}`,
                ),
              );
            } else if (status !== 200) {
              reject(
                new PerfError(
                  "SERVER_ERROR",
                  `${method} ${path} at ${this.baseUrl} failed: ${statusMessage(status, body)}`,
                ),
              );
            } else if (body.length === 0) {
              resolve(undefined);
            } else {
              try {
                resolve(JSON.parse(body.toString("utf8")));
              } catch (error) {
                reject(
                  new PerfError("SERVER_ERROR", `${method} ${path} at ${this.baseUrl} did not answer JSON`, {
                    cause: error,
                  }),
                );
              }
            }
          }, reject);
        },
      );
      request.end(data);
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

/** The byte offset just after the last `"parameters":{` of a JSON text: the top-level one, which every body here writes last. */
function parametersOffset(json: Buffer): number {
  const marker = Buffer.from('"parameters":{', "utf8");
  const at = json.lastIndexOf(marker);
  if (at < 0) throw new Error("a prepared request has no top-level parameters object");
  return at + marker.length;
}

/** The prepared request with sequence_id / sequence_start / sequence_end spliced into its parameters. */
function withSequence(prepared: PreparedHttpRequest, sequence: SequenceFlags): PreparedHttpRequest {
  // A uint64 id beyond 2^53 is not a safe JSON number for every reader; the gateway accepts ids as decimal integers.
  const controls = Buffer.from(
    `"sequence_id":${sequence.id.toString()},"sequence_start":${sequence.start},"sequence_end":${sequence.end},`,
    "utf8",
  );
  const body = Buffer.concat([
    prepared.body.subarray(0, prepared.parametersAt),
    controls,
    prepared.body.subarray(prepared.parametersAt),
  ]);
  const headers: http.OutgoingHttpHeaders = {
    ...(prepared.options.headers as http.OutgoingHttpHeaders),
    "content-length": body.length,
  };
  if (prepared.headerLength !== undefined) {
    headers["inference-header-content-length"] = prepared.headerLength + controls.length;
  }
  return { ...prepared, body, options: { ...prepared.options, headers } };
}

function windowParameters(window: SharedMemoryWindow): Record<string, string | number> {
  return {
    shared_memory_region: window.region,
    shared_memory_byte_size: window.byteSize,
    shared_memory_offset: window.offset,
  };
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

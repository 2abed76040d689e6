import { withoutPerfTraffic } from "@operon/protocol/perf-traffic";
import {
  gatewayOperatorSchema,
  modelStatisticsResponseSchema,
  operatorListSchema,
  operatorValidationSchema,
  parkedModelsSchema,
  repositoryIndexSchema,
  scaleModelResponseSchema,
  scalingStateSchema,
  serverMetadataSchema,
  workersResponseSchema,
  type GatewayOperator,
  type ModelScaling,
  type OperatorLoad,
  type OperatorValidation,
  type ScaleModelResponse,
  type ServerMetadataResponse,
  type WorkersResponse,
} from "@operon/protocol/admin";
import { ERROR_KINDS, type ErrorKind } from "@operon/protocol/errors";
import type { ModelStatistics, RepositoryIndexEntry } from "@operon/protocol/inference";
import type { OnlineLatency } from "@operon/protocol/online-latency";
import { z } from "zod";
import { AppError, type AppErrorCode } from "../../app-error.js";

/**
 * The control plane's only way to the gateway: its own HTTP endpoints
 * (KServe v2, Triton's model repository and statistics extensions, Operon's
 * operators and workers extensions, Prometheus metrics). Calls carry the
 * control plane's admin API key, so they pass when model control is
 * protected. Gateway errors become AppErrors that keep the gateway's message.
 */
export interface GatewayClientOptions {
  /** e.g. http://127.0.0.1:8000 */
  httpUrl: string;
  /** e.g. http://127.0.0.1:8002/metrics; undefined when metrics are off. */
  metricsUrl?: string | undefined;
  /** Bearer key with the admin scope. */
  adminKey?: string | undefined;
  /** Per-call timeout (default 30 s; loads may take longer: see loadTimeoutMs). */
  timeoutMs?: number;
  loadTimeoutMs?: number;
}

export interface TimedResponse<T> {
  body: T;
  status: number;
  /** Round trip measured by the control plane, milliseconds. */
  latencyMs: number;
}

export type { GatewayOperator, OperatorProblem, OperatorValidation } from "@operon/protocol/admin";

const JSON_OBJECT = z.record(z.string(), z.unknown());
const onlineLatencyResponseSchema = z.object({
  online_latency: z.array(
    z.object({
      model_name: z.string(),
      model_version: z.string(),
      window_ms: z.number(),
      count: z.number(),
      p50_us: z.number().nullable(),
      p99_us: z.number().nullable(),
    }),
  ),
});

export class GatewayClient {
  readonly httpUrl: string;
  private readonly timeoutMs: number;
  private readonly loadTimeoutMs: number;

  constructor(private readonly options: GatewayClientOptions) {
    this.httpUrl = options.httpUrl.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.loadTimeoutMs = options.loadTimeoutMs ?? 300_000;
  }

  async serverMetadata(): Promise<ServerMetadataResponse> {
    return this.parsed(serverMetadataSchema, await this.request("GET", "/v2"), "GET /v2");
  }

  async isReady(): Promise<boolean> {
    try {
      return (
        (await this.request("GET", "/v2/health/ready", undefined, { acceptStatuses: [200, 400, 503] })).status === 200
      );
    } catch {
      return false;
    }
  }

  async repositoryIndex(): Promise<RepositoryIndexEntry[]> {
    return this.parsed(
      repositoryIndexSchema,
      await this.request("POST", "/v2/repository/index", {}),
      "POST /v2/repository/index",
    );
  }

  /**
   * Triton's load: `config` (ModelConfig JSON) overrides config.pbtxt;
   * `files` maps `<version>/<path>` to the file's bytes (sent base64, as
   * Triton's `file:` parameters).
   */
  async loadModel(
    name: string,
    options: { config?: Record<string, unknown>; files?: Map<string, Buffer> } = {},
  ): Promise<void> {
    const parameters: Record<string, string> = {};
    if (options.config) parameters["config"] = JSON.stringify(options.config);
    for (const [path, bytes] of options.files ?? []) parameters[`file:${path}`] = bytes.toString("base64");
    await this.request(
      "POST",
      `/v2/repository/models/${encodeURIComponent(name)}/load`,
      Object.keys(parameters).length ? { parameters } : {},
      {
        timeoutMs: this.loadTimeoutMs,
      },
    );
  }

  async unloadModel(name: string): Promise<void> {
    await this.request("POST", `/v2/repository/models/${encodeURIComponent(name)}/unload`, {});
  }

  async modelConfig(name: string, version?: string): Promise<Record<string, unknown>> {
    return this.parsed(JSON_OBJECT, await this.request("GET", `${modelPath(name, version)}/config`), "GET …/config");
  }

  async modelMetadata(name: string, version?: string): Promise<Record<string, unknown>> {
    return this.parsed(JSON_OBJECT, await this.request("GET", modelPath(name, version)), "GET /v2/models/<name>");
  }

  /**
   * Users' traffic per model version: Triton's statistics with the requests
   * tagged as perf traffic (operon perf, perf runs, config searches;
   * perf-traffic.ts) taken out of the success, fail and inference counts.
   * Everything the control plane counts (the Overview, usage, cost, the
   * scheduler's demand, headroom) reads this. `{ raw: true }`: as the gateway
   * sent them.
   */
  async statistics(name?: string, options: { raw?: boolean } = {}): Promise<ModelStatistics[]> {
    const path = name ? `${modelPath(name)}/stats` : "/v2/models/stats";
    const entries = this.parsed(
      modelStatisticsResponseSchema,
      await this.request("GET", path),
      `GET ${path}`,
    ).model_stats;
    return options.raw === true ? entries : entries.map(withoutPerfTraffic);
  }

  /**
   * What online clients of `name` saw over the last `windowMs` (the
   * gateway's online_latency extension, online-latency.ts), one entry per
   * served version: a batch job reads it to back off.
   */
  async onlineLatency(name: string, version: string | undefined, windowMs: number): Promise<OnlineLatency[]> {
    const path = `${modelPath(name, version)}/online_latency?window_ms=${Math.round(windowMs)}`;
    return this.parsed(onlineLatencyResponseSchema, await this.request("GET", path), `GET ${path}`).online_latency;
  }

  /** The resource scheduler's lever: grows or shrinks every served version of `name` to `count` instances in place. */
  /** Rescales `name` to `count` instances; with `kind`, moves them to that kind (new ones first, the old drained). */
  async scaleModel(name: string, count: number, kind?: "KIND_CPU" | "KIND_GPU"): Promise<ScaleModelResponse> {
    const response = await this.request(
      "POST",
      `/v2/operon/models/${encodeURIComponent(name)}/instances`,
      kind === undefined ? { count } : { count, kind },
      { timeoutMs: this.loadTimeoutMs },
    );
    return this.parsed(scaleModelResponseSchema, response, "POST /v2/operon/models/<name>/instances");
  }

  /** Unloads an idle model so that its next request loads it again (the scheduler's LRU unload). */
  async parkModel(name: string): Promise<void> {
    await this.request("POST", `/v2/operon/models/${encodeURIComponent(name)}/park`, {});
  }

  /** Each served model's instances now and as its config asked at load, the parked models and operators' requests in flight. */
  async scalingState(): Promise<{ models: ModelScaling[]; parked: string[]; operators: OperatorLoad[] }> {
    return this.parsed(scalingStateSchema, await this.request("GET", "/v2/operon/scaling"), "GET /v2/operon/scaling");
  }

  /** Models unloaded by parkModel and not loaded again since. */
  async parkedModels(): Promise<string[]> {
    return this.parsed(parkedModelsSchema, await this.request("GET", "/v2/operon/parked"), "GET /v2/operon/parked")
      .models;
  }

  /** A KServe v2 JSON inference; the body is the gateway's response as is. */
  async infer(
    name: string,
    version: string | undefined,
    body: unknown,
  ): Promise<TimedResponse<Record<string, unknown>>> {
    const response = await this.request("POST", `${modelPath(name, version)}/infer`, body);
    return { ...response, body: this.parsed(JSON_OBJECT, response, "POST …/infer") };
  }

  /**
   * An inference with binary inputs (the binary tensor extension): the JSON header, then each binary input's bytes
   * in the order of the header's inputs with `binary_data_size`. The answer is JSON (no output asks for binary).
   */
  async inferBinary(
    name: string,
    version: string | undefined,
    header: Record<string, unknown>,
    binaries: readonly Buffer[],
  ): Promise<TimedResponse<Record<string, unknown>>> {
    const json = Buffer.from(JSON.stringify(header));
    const response = await this.request("POST", `${modelPath(name, version)}/infer`, undefined, {
      raw: {
        body: Buffer.concat([json, ...binaries]),
        headers: { "content-type": "application/octet-stream", "inference-header-content-length": String(json.length) },
      },
    });
    return { ...response, body: this.parsed(JSON_OBJECT, response, "POST …/infer") };
  }

  async listOperators(): Promise<GatewayOperator[]> {
    return this.parsed(operatorListSchema, await this.request("GET", "/v2/operators"), "GET /v2/operators").operators;
  }

  async registerOperator(name: string, spec: Record<string, unknown>): Promise<GatewayOperator> {
    return this.parsed(
      gatewayOperatorSchema,
      await this.request("POST", `/v2/operators/${encodeURIComponent(name)}`, spec),
      "POST /v2/operators/<name>",
    );
  }

  async unregisterOperator(name: string): Promise<void> {
    await this.request("DELETE", `/v2/operators/${encodeURIComponent(name)}`);
  }

  /**
   * The gateway's dry run of registerOperator (POST /v2/operators/<name>/validate):
   * the spec is checked against the models served now and nothing is
   * registered. Problems are data, not errors: an invalid spec answers
   * `valid: false` with its problems, and a spec refused outright (400, e.g.
   * malformed JSON shape) becomes one problem carrying the gateway's message.
   */
  async validateOperator(name: string, spec: Record<string, unknown>): Promise<OperatorValidation> {
    const response = await this.request("POST", `/v2/operators/${encodeURIComponent(name)}/validate`, spec, {
      acceptStatuses: [400],
    });
    if (response.status === 400) {
      const { error } = (response.body ?? {}) as { error?: unknown };
      return {
        valid: false,
        problems: [{ message: typeof error === "string" ? error : "the gateway refused the spec" }],
      };
    }
    const { problems } = this.parsed(operatorValidationSchema, response, "POST /v2/operators/<name>/validate");
    return { valid: problems.length === 0, problems };
  }

  async workers(): Promise<WorkersResponse> {
    return this.parsed(
      workersResponseSchema,
      await this.request("GET", "/v2/operon/workers"),
      "GET /v2/operon/workers",
    );
  }

  /** Prometheus text from the metrics endpoint; undefined when metrics are off. */
  async metricsText(): Promise<string | undefined> {
    if (!this.options.metricsUrl) return undefined;
    // The key matters where the gateway runs with --metrics-require-key.
    const headers: Record<string, string> = this.options.adminKey
      ? { authorization: `Bearer ${this.options.adminKey}` }
      : {};
    const response = await this.fetchWithTimeout(this.options.metricsUrl, { method: "GET", headers }, this.timeoutMs);
    if (!response.ok) throw new AppError("GATEWAY_ERROR", `the gateway's metrics endpoint answered ${response.status}`);
    return response.text();
  }

  /** The response's body checked against the admin contract (@operon/protocol/admin); GATEWAY_ERROR naming the field when it does not match. */
  private parsed<S extends z.ZodType>(schema: S, response: TimedResponse<unknown>, what: string): z.infer<S> {
    const result = schema.safeParse(response.body);
    if (result.success) return result.data;
    const issue = result.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? "the body" : `'${issue.path.join(".")}'`;
    throw new AppError(
      "GATEWAY_ERROR",
      `the gateway's answer to ${what} does not match the admin contract: ${where}: ${issue?.message ?? "invalid"}`,
    );
  }

  private async request(
    method: string,
    path: string,
    body?: unknown,
    options: {
      timeoutMs?: number;
      acceptStatuses?: number[];
      /** A body sent as given (binary), with its own headers, instead of `body` as JSON. */
      raw?: { body: Buffer; headers: Record<string, string> };
    } = {},
  ): Promise<TimedResponse<unknown>> {
    const headers: Record<string, string> = { ...options.raw?.headers };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.options.adminKey) headers["authorization"] = `Bearer ${this.options.adminKey}`;
    const started = performance.now();
    const payload =
      options.raw !== undefined ? options.raw.body : body !== undefined ? JSON.stringify(body) : undefined;
    const response = await this.fetchWithTimeout(
      `${this.httpUrl}${path}`,
      { method, headers, ...(payload !== undefined ? { body: payload } : {}) },
      options.timeoutMs ?? this.timeoutMs,
    );
    const text = await response.text();
    const latencyMs = performance.now() - started;
    let parsed: unknown = undefined;
    if (text.length > 0) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = { error: text };
      }
    }
    if (response.ok || options.acceptStatuses?.includes(response.status))
      return { body: parsed, status: response.status, latencyMs };
    const { error: message, kind } = (parsed ?? {}) as { error?: unknown; kind?: unknown };
    throw gatewayError(
      response.status,
      typeof message === "string" ? message : `${method} ${path} answered ${response.status}`,
      ERROR_KINDS.includes(kind as ErrorKind) ? (kind as ErrorKind) : undefined,
    );
  }

  private async fetchWithTimeout(url: string, init: RequestInit, timeoutMs: number): Promise<Response> {
    try {
      return await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      const reason =
        (error as Error).name === "TimeoutError" ? `did not answer within ${timeoutMs} ms` : "is not reachable";
      throw new AppError("GATEWAY_UNAVAILABLE", `the gateway at ${this.httpUrl} ${reason}`, { cause: error });
    }
  }
}

function modelPath(name: string, version?: string): string {
  return `/v2/models/${encodeURIComponent(name)}${version ? `/versions/${encodeURIComponent(version)}` : ""}`;
}

/**
 * A failed gateway call. `kind` is the gateway's OperonError kind (the
 * `"kind"` of its error body), so callers branch on it, never on the text;
 * undefined when the failure had none (a failure of HTTP itself: no such
 * endpoint, a body over the limit).
 */
export class GatewayError extends AppError {
  constructor(
    code: AppErrorCode,
    message: string,
    readonly kind: ErrorKind | undefined,
    readonly status: number,
  ) {
    super(code, message, { internal: `gateway status ${status}${kind !== undefined ? ` ${kind}` : ""}` });
    this.name = "GatewayError";
  }
}

/**
 * The one table from the gateway's error kinds to the API's codes. The
 * client's own mistakes in what it sent become VALIDATION_FAILED; the
 * gateway's failures, and refusals of the control plane's key, GATEWAY_ERROR.
 */
export const GATEWAY_KIND_CODES: Record<ErrorKind, AppErrorCode> = {
  INVALID_ARG: "VALIDATION_FAILED",
  ALREADY_EXISTS: "VALIDATION_FAILED",
  CANCELLED: "VALIDATION_FAILED",
  NOT_FOUND: "NOT_FOUND",
  UNAVAILABLE: "GATEWAY_UNAVAILABLE",
  UNSUPPORTED: "GATEWAY_ERROR",
  INTERNAL: "GATEWAY_ERROR",
  UNKNOWN: "GATEWAY_ERROR",
  UNAUTHENTICATED: "GATEWAY_ERROR",
  PERMISSION_DENIED: "GATEWAY_ERROR",
  RESOURCE_EXHAUSTED: "GATEWAY_ERROR",
};

/** Codes of failures without a kind (HTTP itself), by status; anything else is GATEWAY_ERROR. */
const KINDLESS_STATUS_CODES: Record<number, AppErrorCode> = {
  400: "VALIDATION_FAILED",
  404: "NOT_FOUND",
  413: "PAYLOAD_TOO_LARGE",
  503: "GATEWAY_UNAVAILABLE",
};

/** The gateway's error back to the API's code; the gateway's message is kept. */
export function gatewayError(status: number, message: string, kind: ErrorKind | undefined): GatewayError {
  if (kind === "UNAUTHENTICATED" || kind === "PERMISSION_DENIED") {
    return new GatewayError("GATEWAY_ERROR", `the gateway refused the control plane's key: ${message}`, kind, status);
  }
  const code = kind !== undefined ? GATEWAY_KIND_CODES[kind] : (KINDLESS_STATUS_CODES[status] ?? "GATEWAY_ERROR");
  return new GatewayError(code, message, kind, status);
}

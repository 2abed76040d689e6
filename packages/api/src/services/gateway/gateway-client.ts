import type { WorkersResponse } from "@operon/protocol/admin";
import { ERROR_KINDS, type ErrorKind } from "@operon/protocol/errors";
import type { ModelStatistics, RepositoryIndexEntry } from "@operon/protocol/inference";
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

export interface GatewayOperator {
  name: string;
  version: string;
  source: "api" | "repository";
  spec: Record<string, unknown>;
  /** Step models that cannot serve now (the operator is degraded while any is listed). */
  unreadyModels?: string[];
}

/** One problem the gateway found in an operator spec; `path` names the field when the gateway knows it. */
export interface OperatorProblem {
  code?: string;
  path?: string;
  message: string;
}

export interface OperatorValidation {
  valid: boolean;
  problems: OperatorProblem[];
}

export class GatewayClient {
  readonly httpUrl: string;
  private readonly timeoutMs: number;
  private readonly loadTimeoutMs: number;

  constructor(private readonly options: GatewayClientOptions) {
    this.httpUrl = options.httpUrl.replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.loadTimeoutMs = options.loadTimeoutMs ?? 300_000;
  }

  async serverMetadata(): Promise<{ name: string; version: string; extensions: string[] }> {
    return (await this.request("GET", "/v2")).body as never;
  }

  async isReady(): Promise<boolean> {
    try {
      return (await this.request("GET", "/v2/health/ready", undefined, { acceptStatuses: [200, 400, 503] })).status === 200;
    } catch {
      return false;
    }
  }

  async repositoryIndex(): Promise<RepositoryIndexEntry[]> {
    return (await this.request("POST", "/v2/repository/index", {})).body as RepositoryIndexEntry[];
  }

  /**
   * Triton's load: `config` (ModelConfig JSON) overrides config.pbtxt;
   * `files` maps `<version>/<path>` to the file's bytes (sent base64, as
   * Triton's `file:` parameters).
   */
  async loadModel(name: string, options: { config?: Record<string, unknown>; files?: Map<string, Buffer> } = {}): Promise<void> {
    const parameters: Record<string, string> = {};
    if (options.config) parameters["config"] = JSON.stringify(options.config);
    for (const [path, bytes] of options.files ?? []) parameters[`file:${path}`] = bytes.toString("base64");
    await this.request("POST", `/v2/repository/models/${encodeURIComponent(name)}/load`, Object.keys(parameters).length ? { parameters } : {}, {
      timeoutMs: this.loadTimeoutMs,
    });
  }

  async unloadModel(name: string): Promise<void> {
    await this.request("POST", `/v2/repository/models/${encodeURIComponent(name)}/unload`, {});
  }

  async modelConfig(name: string, version?: string): Promise<Record<string, unknown>> {
    return (await this.request("GET", `${modelPath(name, version)}/config`)).body as Record<string, unknown>;
  }

  async modelMetadata(name: string, version?: string): Promise<Record<string, unknown>> {
    return (await this.request("GET", modelPath(name, version))).body as Record<string, unknown>;
  }

  async statistics(name?: string): Promise<ModelStatistics[]> {
    const path = name ? `${modelPath(name)}/stats` : "/v2/models/stats";
    return ((await this.request("GET", path)).body as { model_stats: ModelStatistics[] }).model_stats;
  }

  /** The resource scheduler's lever: grows or shrinks every served version of `name` to `count` instances in place. */
  async scaleModel(name: string, count: number): Promise<{ model: string; from: number; to: number }> {
    return (await this.request("POST", `/v2/operon/models/${encodeURIComponent(name)}/instances`, { count }, { timeoutMs: this.loadTimeoutMs })).body as never;
  }

  /** Unloads an idle model so that its next request loads it again (the scheduler's LRU unload). */
  async parkModel(name: string): Promise<void> {
    await this.request("POST", `/v2/operon/models/${encodeURIComponent(name)}/park`, {});
  }

  /** Each served model's instances now and as its config asked at load, and the parked models. */
  async scalingState(): Promise<{ models: Array<{ model: string; instances: number; configuredInstances: number; queued: number }>; parked: string[] }> {
    return (await this.request("GET", "/v2/operon/scaling")).body as never;
  }

  /** Models unloaded by parkModel and not loaded again since. */
  async parkedModels(): Promise<string[]> {
    return ((await this.request("GET", "/v2/operon/parked")).body as { models: string[] }).models;
  }

  /** A KServe v2 JSON inference; the body is the gateway's response as is. */
  async infer(name: string, version: string | undefined, body: unknown): Promise<TimedResponse<Record<string, unknown>>> {
    return (await this.request("POST", `${modelPath(name, version)}/infer`, body)) as TimedResponse<Record<string, unknown>>;
  }

  async listOperators(): Promise<GatewayOperator[]> {
    return ((await this.request("GET", "/v2/operators")).body as { operators: GatewayOperator[] }).operators;
  }

  async registerOperator(name: string, spec: Record<string, unknown>): Promise<GatewayOperator> {
    return (await this.request("POST", `/v2/operators/${encodeURIComponent(name)}`, spec)).body as GatewayOperator;
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
    const response = await this.request("POST", `/v2/operators/${encodeURIComponent(name)}/validate`, spec, { acceptStatuses: [400] });
    const body = (response.body ?? {}) as { valid?: unknown; problems?: unknown; error?: unknown };
    const problems: OperatorProblem[] = Array.isArray(body.problems)
      ? body.problems.map((raw: unknown) => {
          const item = (typeof raw === "object" && raw !== null ? raw : { message: String(raw) }) as Record<string, unknown>;
          return {
            message: typeof item["message"] === "string" ? item["message"] : JSON.stringify(raw),
            ...(typeof item["code"] === "string" ? { code: item["code"] } : {}),
            ...(typeof item["path"] === "string" && item["path"] !== "" ? { path: item["path"] } : {}),
          };
        })
      : response.status === 400
        ? [{ message: typeof body.error === "string" ? body.error : "the gateway refused the spec" }]
        : [];
    const valid = typeof body.valid === "boolean" ? body.valid && problems.length === 0 : problems.length === 0;
    return { valid, problems };
  }

  async workers(): Promise<WorkersResponse> {
    return (await this.request("GET", "/v2/operon/workers")).body as WorkersResponse;
  }

  /** Prometheus text from the metrics endpoint; undefined when metrics are off. */
  async metricsText(): Promise<string | undefined> {
    if (!this.options.metricsUrl) return undefined;
    // The key matters where the gateway runs with --metrics-require-key.
    const headers: Record<string, string> = this.options.adminKey ? { authorization: `Bearer ${this.options.adminKey}` } : {};
    const response = await this.fetchWithTimeout(this.options.metricsUrl, { method: "GET", headers }, this.timeoutMs);
    if (!response.ok) throw new AppError("GATEWAY_ERROR", `the gateway's metrics endpoint answered ${response.status}`);
    return response.text();
  }

  private async request(
    method: string,
    path: string,
    body?: unknown,
    options: { timeoutMs?: number; acceptStatuses?: number[] } = {},
  ): Promise<TimedResponse<unknown>> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.options.adminKey) headers["authorization"] = `Bearer ${this.options.adminKey}`;
    const started = performance.now();
    const response = await this.fetchWithTimeout(
      `${this.httpUrl}${path}`,
      { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) },
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
    if (response.ok || options.acceptStatuses?.includes(response.status)) return { body: parsed, status: response.status, latencyMs };
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
      const reason = (error as Error).name === "TimeoutError" ? `did not answer within ${timeoutMs} ms` : "is not reachable";
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
const KINDLESS_STATUS_CODES: Record<number, AppErrorCode> = { 400: "VALIDATION_FAILED", 404: "NOT_FOUND", 413: "PAYLOAD_TOO_LARGE", 503: "GATEWAY_UNAVAILABLE" };

/** The gateway's error back to the API's code; the gateway's message is kept. */
export function gatewayError(status: number, message: string, kind: ErrorKind | undefined): GatewayError {
  if (kind === "UNAUTHENTICATED" || kind === "PERMISSION_DENIED") {
    return new GatewayError("GATEWAY_ERROR", `the gateway refused the control plane's key: ${message}`, kind, status);
  }
  const code = kind !== undefined ? GATEWAY_KIND_CODES[kind] : (KINDLESS_STATUS_CODES[status] ?? "GATEWAY_ERROR");
  return new GatewayError(code, message, kind, status);
}

import type { GpuInfo, WorkersResponse } from "@operon/protocol/admin";
import type { ModelScalingState, ScalingKind } from "../repository/model-scaling.js";
import { asOperonError, OperonError } from "@operon/protocol/errors";
import type {
  InferRequest,
  InferResponse,
  ModelLoadOptions,
  ModelMetadata,
  ModelStatistics,
  ModelUnloadOptions,
  RepositoryIndexEntry,
  RequestTimings,
  ServerMetadata,
} from "@operon/protocol/inference";
import { DEFAULT_MAX_BYTES_ELEMENTS, type Parameters, type Tensor } from "@operon/protocol/tensor";
import type { OnlineLatency } from "@operon/protocol/online-latency";
import { PERF_TRAFFIC_PARAMETER, PERF_TRAFFIC_VALUE } from "@operon/protocol/perf-traffic";
import type { InferenceEngine, OperatorInfo, OperatorValidation, StreamResponseHandler } from "./engine-api.js";
import type { TenantShares } from "../admission/tenant-shares.js";
import { operatorTenant } from "../admission/operator-tenant.js";
import type { FailureReason, GatewayMetrics } from "../observability/metrics.js";
import type { ModelManager, ServedVersion } from "../repository/model-manager.js";
import { workersReport } from "../observability/workers-report.js";
import { responseCacheKey, type ResponseCache } from "./response-cache.js";
import type { ScheduledResult, StreamedResponse } from "../scheduling/request-scheduler.js";
import type { RunnerRequest } from "../scheduling/version-runner.js";
import type { BlsRequest } from "../instances/worker-process.js";
import { BLS_DEPTH_PARAMETER, restoreOutputShapes, responseOf, scheduledRequestOf } from "./engine-request-shape.js";

// The request-shape helpers live in engine-request-shape.ts; its limits are still offered here, to this module's importers.
export { BLS_DEPTH_PARAMETER, MAX_BLS_DEPTH } from "./engine-request-shape.js";

/** The protocol extensions this server implements, exactly (server metadata lists these). */
export const SERVER_EXTENSIONS = [
  "binary_tensor_data",
  "model_repository",
  "model_configuration",
  "statistics",
  "schedule_policy",
  "parameters",
  "sequence",
  "sequence(string_id)",
  "system_shared_memory",
  "logging",
  "trace",
];

/**
 * The engine behind both frontends: it resolves the model version, checks
 * the request against the config, runs it on the version's instances and
 * records statistics. It never runs inference itself (workers do).
 */
export class Engine implements InferenceEngine {
  private draining = false;
  private inFlight = 0;
  private startupDone = false;

  constructor(
    private readonly manager: ModelManager,
    private readonly info: {
      version: string;
      strictReadiness: boolean;
      responseCache?: ResponseCache | undefined;
      /** Where the latency summaries are observed (one per successful request); unset = not observed. */
      metrics?: GatewayMetrics | undefined;
      /** Traffic shares per tenant (admission/tenant-shares.ts); bypassed while not enabled. */
      tenantShares?: TenantShares | undefined;
      /** Elements one BYTES input may hold (--max-bytes-elements); default DEFAULT_MAX_BYTES_ELEMENTS. */
      maxBytesElements?: number | undefined;
      /** The host's GPU readings (observability/gpu-metrics.ts); unset = none (no NVML). */
      gpus?: (() => GpuInfo[]) | undefined;
      /** --backend-isolation, reported with the workers so the console says where a new model's instances will run. */
      defaultIsolation?: "auto" | "thread" | "process" | undefined;
    },
  ) {
    // Operator steps (ensembles, registered DAGs) call models through this engine's own infer, in process:
    // the step model's validation, scheduler (batching), statistics and cache apply as for any request.
    manager.setStepRunner((model, version, inputs, outputNames, signal, parameters, deviceOutputs) =>
      this.infer({
        modelName: model,
        ...(version !== undefined ? { modelVersion: version } : {}),
        parameters: parameters ?? {},
        inputs,
        outputs: outputNames.map((name) => ({ name })),
        signal,
        // Tenant shares: a step counts against the share of the operator request's tenant (operator-tenant.ts).
        ...stepTenant(this.info.tenantShares),
        // The frontend drops the tag from callers who may not set it, so a step's copy of it can be trusted.
        ...(parameters?.[PERF_TRAFFIC_PARAMETER] === PERF_TRAFFIC_VALUE ? { trafficClass: "perf" as const } : {}),
        ...(deviceOutputs !== undefined ? { deviceOutputs } : {}),
      }),
    );
    // Models' BLS calls (ctx.infer) are requests like any other: validation, scheduler (batching), statistics, cache.
    manager.setBlsHandler((call, depth) => this.inferBls(call, depth));
  }

  /** A number per load of a model version (keyed by its instances), in cache keys: a reload never serves the old files' responses. */
  private readonly loadGenerations = new WeakMap<object, string>();
  private nextLoadGeneration = 0;

  markStartupDone(): void {
    this.startupDone = true;
  }

  /** Stop reporting ready; new requests are still served until the frontends close. */
  beginDrain(): void {
    this.draining = true;
  }

  get inFlightRequests(): number {
    return this.inFlight;
  }

  serverMetadata(): ServerMetadata {
    return { name: "operon", version: this.info.version, extensions: [...SERVER_EXTENSIONS] };
  }

  isLive(): boolean {
    return true;
  }

  /**
   * Something an operator should know about this server's readiness that does not make it unready
   * (a cluster gateway serving without its database: it keeps serving what it read last). The HTTP
   * frontend sends it in the Operon-Readiness-Detail header of /v2/health/ready; undefined = none.
   */
  private readinessNote: (() => string | undefined) | undefined;

  setReadinessDetail(provider: () => string | undefined): void {
    this.readinessNote = provider;
  }

  readinessDetail(): string | undefined {
    return this.readinessNote?.();
  }

  isReady(): boolean {
    if (this.draining || !this.startupDone) return false;
    return !this.info.strictReadiness || this.manager.allModelsReady();
  }

  isModelReady(name: string, version?: string): boolean {
    return this.manager.isModelReady(name, version);
  }

  modelMetadata(name: string, version?: string): ModelMetadata {
    const served = this.manager.resolve(name, version);
    const batched = (served.config.max_batch_size ?? 0) > 0;
    const tensor = (t: { name?: string; data_type?: string; dims?: number[] }) => ({
      name: t.name ?? "",
      datatype: wireDataType(t.data_type),
      shape: batched ? [-1, ...(t.dims ?? [])] : [...(t.dims ?? [])],
    });
    return {
      name,
      versions: this.manager.versionsOf(name),
      platform: served.config.platform || "onnxruntime_onnx",
      inputs: (served.config.input ?? []).map(tensor),
      outputs: (served.config.output ?? []).map(tensor),
    };
  }

  modelConfig(name: string, version?: string): Record<string, unknown> {
    return this.manager.resolve(name, version).config as Record<string, unknown>;
  }

  isDecoupled(name: string, version?: string): boolean {
    try {
      return isDecoupledConfig(this.manager.resolve(name, version));
    } catch {
      return false;
    }
  }

  /**
   * Not an async function: for a model that is served now (every request but the first after a park) the promise
   * returned is runForOneResponse's own, where an async wrapper returning it would add three turns of the
   * microtask queue to every request (two to adopt the inner promise, one to settle its own).
   */
  infer(request: InferRequest): Promise<InferResponse> {
    let prepared: PreparedRequest | undefined;
    try {
      prepared = this.prepareServed(request, "one response");
    } catch (error) {
      return Promise.reject(error);
    }
    if (prepared === undefined) {
      return this.prepare(request, "one response").then((loaded) => this.runForOneResponse(request, loaded));
    }
    return this.runForOneResponse(request, prepared);
  }

  async inferStream(request: InferRequest, onResponse: StreamResponseHandler): Promise<void> {
    const prepared = this.prepareServed(request, "any") ?? (await this.prepare(request, "any"));
    if (!isDecoupledConfig(prepared.served)) {
      onResponse(await this.runForOneResponse(request, prepared), true, false);
      return;
    }
    return this.runStreaming(request, prepared, (response, final) => onResponse(response, final, true));
  }

  async whenServed(name: string, version?: string): Promise<void> {
    try {
      this.manager.resolve(name, version);
    } catch (error) {
      await this.manager.resolveAfterLoad(error, name, version);
    }
  }

  /**
   * The one preparation every request gets, whichever entry it came by
   * (unary, stream, operator step, BLS call), as Triton's core has one
   * Model::Enqueue: resolve the model version (loading a model the resource
   * scheduler parked), refuse a decoupled model where one response is
   * expected, and validate the request against the version's signature. A
   * request that fails validation counts as a failure of the version. The
   * key and its access were checked by the frontend; the tenant gate is
   * applied in dispatch().
   */
  private async prepare(request: InferRequest, responses: "one response" | "any"): Promise<PreparedRequest> {
    const started = process.hrtime.bigint();
    let served: ServedVersion;
    try {
      served = this.manager.resolve(request.modelName, request.modelVersion);
    } catch (error) {
      // Only a failed lookup gets here: a model the resource scheduler unloaded loads again (parked-models.ts).
      served = await this.manager.resolveAfterLoad(error, request.modelName, request.modelVersion);
    }
    return this.prepareFor(served, request, responses, started);
  }

  /**
   * prepare() without a turn of the microtask queue for the common case, a
   * version that is served now: the prepared request, or undefined when the
   * lookup fails (prepare() then loads a parked model or throws its error).
   */
  private prepareServed(request: InferRequest, responses: "one response" | "any"): PreparedRequest | undefined {
    const started = process.hrtime.bigint();
    let served: ServedVersion;
    try {
      served = this.manager.resolve(request.modelName, request.modelVersion);
    } catch {
      return undefined;
    }
    return this.prepareFor(served, request, responses, started);
  }

  private prepareFor(
    served: ServedVersion,
    request: InferRequest,
    responses: "one response" | "any",
    started: bigint,
  ): PreparedRequest {
    if (responses === "one response" && isDecoupledConfig(served)) {
      // Triton's answer too: a decoupled model's responses cannot fit one reply.
      throw new OperonError(
        "UNSUPPORTED",
        `model '${request.modelName}' is decoupled: use ModelStreamInfer (gRPC) or generate_stream / infer_stream (HTTP)`,
      );
    }
    try {
      return {
        served,
        scheduled: scheduledRequestOf(served, request, this.info.maxBytesElements ?? DEFAULT_MAX_BYTES_ELEMENTS),
        started,
      };
    } catch (error) {
      this.record(request, served, started, { failed: "OTHER" });
      throw error;
    }
  }

  /**
   * Hands a prepared request to its version's runner: through the tenant
   * gate while tenant shares are on (operators are not gated themselves:
   * their steps are, as the request's tenant), else straight to the runner. `onStreamed` given: a
   * decoupled model's responses go there, one final among them.
   */
  private dispatch(
    request: InferRequest,
    { served, scheduled }: PreparedRequest,
    onStreamed?: (response: StreamedResponse) => void,
  ): Promise<ScheduledResult> {
    const shares = this.info.tenantShares;
    const gated = shares !== undefined && shares.enabled && served.operator === undefined;
    if (onStreamed === undefined) {
      if (gated) return shares.execute(served, request.tenantId, scheduled);
      // An operator's steps are gated as its caller's tenant: its request counts the units of all its steps.
      if (served.operator !== undefined && shares?.enabled === true && request.tenantId !== undefined) {
        const tenantId = request.tenantId;
        return operatorTenant.run(tenantId, () => served.instances.execute(scheduled));
      }
      return served.instances.execute(scheduled);
    }
    const executeStream = served.instances.executeStream?.bind(served.instances);
    if (executeStream === undefined) {
      throw new OperonError(
        "UNSUPPORTED",
        `model '${request.modelName}' version ${served.version} cannot stream responses`,
      );
    }
    return gated
      ? shares.execute(served, request.tenantId, scheduled, (admitted) => executeStream(admitted, onStreamed))
      : executeStream(scheduled, onStreamed);
  }

  /** A request answered with one response: from the response cache when it may, else run. */
  private async runForOneResponse(request: InferRequest, prepared: PreparedRequest): Promise<InferResponse> {
    const { served, scheduled, started } = prepared;
    this.inFlight += 1;
    try {
      // Response cache (Triton): a hit answers without scheduling; a miss runs and inserts the response.
      // A step request of tensors on a GPU (the operator planner's) has no bytes to key or keep.
      const cache = request.deviceOutputs === undefined ? this.responseCacheFor(served) : undefined;
      let cacheKey: string | undefined;
      let cacheMissNs = 0;
      if (cache !== undefined) {
        const lookupStarted = process.hrtime.bigint();
        cacheKey = responseCacheKey({
          model: served.model,
          version: served.version,
          scope: this.loadGeneration(served),
          inputs: request.inputs,
          outputs: scheduled.outputNames,
        });
        const hit = cache.get(cacheKey);
        cacheMissNs = elapsedNs(lookupStarted);
        if (hit !== undefined) {
          served.stats.recordCacheHit(cacheMissNs);
          this.record(request, served, started, { cached: true });
          return responseOf(request, served, hit.outputs);
        }
      }
      try {
        const result = await this.dispatch(request, prepared);
        const outputs = restoreOutputShapes(served, result.outputs, scheduled.outputNames);
        if (cache !== undefined && cacheKey !== undefined) {
          const insertStarted = process.hrtime.bigint();
          cache.set(cacheKey, { outputs });
          served.stats.recordCacheMiss(cacheMissNs + elapsedNs(insertStarted));
          cacheKey = undefined;
        }
        this.record(request, served, started, { ran: result, batchSize: scheduled.batchSize });
        const response = responseOf(request, served, outputs);
        if (result.parameters !== undefined) response.parameters = result.parameters;
        return response;
      } catch (error) {
        if (cacheKey !== undefined) served.stats.recordCacheMiss(cacheMissNs);
        const failure = asOperonError(error);
        this.record(request, served, started, { failed: failureReason(failure) });
        throw failure;
      }
    } finally {
      this.inFlight -= 1;
    }
  }

  /** A decoupled model's request: every response to onResponse, in order, exactly one final; statistics per response and per request. */
  private runStreaming(
    request: InferRequest,
    prepared: PreparedRequest,
    onResponse: (response: InferResponse | OperonError, final: boolean) => void,
  ): Promise<void> {
    const { served, scheduled, started } = prepared;
    const { signal } = request;
    this.inFlight += 1;
    return new Promise<void>((resolve, reject) => {
      let delivered = 0;
      let finished = false;
      let settled = false;
      let failure: OperonError | undefined;
      let lastAt = started;
      let responseIndex = 0;
      const deliver = (response: InferResponse | OperonError, final: boolean): void => {
        if (finished) return;
        delivered += 1;
        if (final) finished = true;
        try {
          onResponse(response, final);
        } catch {
          // The frontend's callback failing is its own bug; the stream still completes.
        }
        if (final) resolve();
      };
      const onStreamed = (streamed: StreamedResponse): void => {
        const now = process.hrtime.bigint();
        const ns = Number(now - lastAt);
        const index = responseIndex++;
        lastAt = now;
        if ("error" in streamed) {
          failure ??= streamed.error;
          served.stats.recordResponse(index, ns, "fail");
          deliver(streamed.error, streamed.final);
          return;
        }
        served.stats.recordResponse(index, ns, streamed.final && streamed.outputs.length === 0 ? "empty" : "success");
        const response = responseOf(
          request,
          served,
          restoreOutputShapes(served, streamed.outputs, scheduled.outputNames),
        );
        // Parameters the backend set on this response (native backends' TRITONBACKEND_ResponseSet*Parameter).
        if (streamed.parameters !== undefined) response.parameters = streamed.parameters;
        deliver(response, streamed.final);
      };
      const queued = (() => {
        try {
          return this.dispatch(request, prepared, onStreamed);
        } catch (error) {
          return Promise.reject(asOperonError(error));
        }
      })();
      // Client gone: while queued, the scheduler drops the request (and `queued` rejects before this runs);
      // once running, the stream ends for the client now and the model's later responses are dropped. The
      // backend hears of it through the same signal (worker processes get a `cancel` frame; native backends
      // see TRITONBACKEND_RequestIsCancelled) and may stop early.
      const onAbort = (): void => {
        setImmediate(() => {
          if (settled || finished) return;
          failure ??= new OperonError("CANCELLED", "the client cancelled the request while the model was streaming");
          deliver(failure, true);
        });
      };
      if (signal !== undefined) {
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
      }
      const done = (outcome: { result: ScheduledResult } | { error: OperonError }): void => {
        settled = true;
        signal?.removeEventListener("abort", onAbort);
        this.inFlight -= 1;
        if ("error" in outcome) {
          this.record(request, served, started, { failed: failureReason(outcome.error) });
          if (delivered === 0) reject(outcome.error);
          else deliver(outcome.error, true);
          return;
        }
        // A stream that ran but sent a failed response counts as a failed request.
        this.record(
          request,
          served,
          started,
          failure !== undefined
            ? { failed: failureReason(failure) }
            : { ran: outcome.result, batchSize: scheduled.batchSize },
        );
        if (!finished)
          deliver(
            new OperonError("INTERNAL", `model '${request.modelName}' ended its stream without a final response`),
            true,
          );
      };
      queued.then(
        (result) => done({ result }),
        (error: unknown) => done({ error: asOperonError(error) }),
      );
    });
  }

  /**
   * The one place a request's outcome is recorded, whichever way it ended
   * (failed validation or run, answered from the cache, ran): the version's
   * statistics, a tagged perf request counted apart too (request.trafficClass,
   * perf-traffic.ts: usage leaves it out), the latency summaries of a user's
   * success (the usage charts' p50..p99: a perf request, which loads the model
   * on purpose, is left out; Triton's statistics keep it), an online
   * success's latency for online_latency (neither perf nor a batch job's:
   * a job reads it to back off), and a traced request's timings, all from
   * the same duration.
   */
  private record(request: InferRequest, served: ServedVersion, started: bigint, outcome: RequestOutcome): void {
    const requestNs = elapsedNs(started);
    const perf = request.trafficClass === "perf";
    if ("failed" in outcome) {
      served.stats.recordFailure(requestNs, outcome.failed);
      if (perf) served.stats.recordPerfTraffic("fail", 0, requestNs);
      return;
    }
    if ("cached" in outcome) {
      served.stats.recordCachedSuccess(requestNs);
      if (perf) served.stats.recordPerfTraffic("success", 0, requestNs);
      else this.info.metrics?.observeLatency(served, { requestNs, queueNs: 0 });
      if (request.trafficClass === undefined) served.stats.recordOnline(requestNs);
      return;
    }
    const { ran: result, batchSize } = outcome;
    served.stats.recordSuccess(requestNs, result.queueNs, result.timing, batchSize);
    if (request.onTimings !== undefined) request.onTimings(timingsOf(result));
    if (perf) {
      served.stats.recordPerfTraffic("success", batchSize, requestNs);
      return;
    }
    if (request.trafficClass === undefined) served.stats.recordOnline(requestNs);
    this.info.metrics?.observeLatency(served, {
      requestNs,
      queueNs: result.queueNs,
      computeInferNs: result.timing.computeInferNs,
    });
  }

  /** A model's BLS call (ctx.infer) at BLS depth `depth`: an inference like any other, one level deeper. */
  private async inferBls(call: BlsRequest, depth: number): Promise<{ outputs: Tensor[] }> {
    if (this.isDecoupled(call.model, call.version)) {
      throw new OperonError(
        "UNSUPPORTED",
        `model '${call.model}' is decoupled: a BLS call (ctx.infer) takes one response, so it cannot call a decoupled model`,
      );
    }
    const parameters: Parameters = {};
    for (const [key, value] of Object.entries(call.parameters ?? {})) {
      if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") parameters[key] = value;
    }
    // Model code may not tag its calls as perf traffic (it would hide them from usage and cost).
    delete parameters[PERF_TRAFFIC_PARAMETER];
    // A depth the model passed on (explicitly) never lowers the one the gateway derived.
    const passed = parameters[BLS_DEPTH_PARAMETER];
    parameters[BLS_DEPTH_PARAMETER] = typeof passed === "number" && passed > depth ? passed : depth;
    const response = await this.infer({
      modelName: call.model,
      ...(call.version !== undefined ? { modelVersion: call.version } : {}),
      parameters,
      inputs: call.inputs,
      ...(call.outputNames !== undefined ? { outputs: call.outputNames.map((name) => ({ name })) } : {}),
    });
    return { outputs: response.outputs };
  }

  /**
   * The server's cache when this version may use it: the server has one
   * (--cache-config), the config enables response_cache, and the model is
   * neither decoupled (validateConfig rejects that pairing) nor sequence
   * batched (its outputs depend on state, as in Triton).
   */
  private responseCacheFor(served: ServedVersion): ResponseCache | undefined {
    const config = served.config;
    if (this.info.responseCache === undefined || config.response_cache?.enable !== true) return undefined;
    if (config.model_transaction_policy?.decoupled === true || config.sequence_batching !== undefined) return undefined;
    return this.info.responseCache;
  }

  private loadGeneration(served: ServedVersion): string {
    let generation = this.loadGenerations.get(served.instances);
    if (generation === undefined) {
      generation = String((this.nextLoadGeneration += 1));
      this.loadGenerations.set(served.instances, generation);
    }
    return generation;
  }

  repositoryIndex(options: { ready?: boolean }): Promise<RepositoryIndexEntry[]> {
    return this.manager.repositoryIndex(options.ready ?? false);
  }

  async loadModel(name: string, options: ModelLoadOptions): Promise<void> {
    await this.manager.loadFromApi(name, options);
  }

  async unloadModel(name: string, _options: ModelUnloadOptions): Promise<void> {
    await this.manager.unloadFromApi(name);
  }

  scaleModel(
    name: string,
    count: number,
    kind?: ScalingKind,
  ): Promise<{ model: string; from: number; to: number; kind: ScalingKind }> {
    return this.manager.scaleInstances(name, count, kind);
  }

  parkModel(name: string): Promise<void> {
    return this.manager.park(name);
  }

  parkedModels(): string[] {
    return this.manager.parkedModels();
  }

  scalingState(): ModelScalingState[] {
    return this.manager.scalingState();
  }

  operatorLoad(): Array<{ operator: string; inFlight: number; modelCalls: Record<string, number> }> {
    return this.manager.operatorLoad();
  }

  modelStatistics(name?: string, version?: string): ModelStatistics[] {
    return this.manager.servedVersions(name, version).map((served) => served.stats.snapshot());
  }

  onlineLatency(name: string, version: string | undefined, windowMs: number): OnlineLatency[] {
    return this.manager.servedVersions(name, version).map((served) => served.stats.onlineLatency(windowMs));
  }

  async registerOperator(spec: unknown): Promise<OperatorInfo> {
    return this.manager.registerOperator(spec);
  }

  async unregisterOperator(name: string): Promise<void> {
    await this.manager.unregisterOperator(name);
  }

  listOperators(): OperatorInfo[] {
    return this.manager.listOperators();
  }

  async validateOperator(spec: unknown): Promise<OperatorValidation> {
    const problems = await this.manager.operatorProblems(spec);
    return { valid: problems.length === 0, problems };
  }

  workers(): Promise<WorkersResponse> {
    return workersReport(this.manager.workerInstances(), this.info.gpus?.() ?? [], this.info.defaultIsolation);
  }
}

/** A request after the engine's one preparation step: its version, what its runner schedules, when it arrived. */
interface PreparedRequest {
  served: ServedVersion;
  scheduled: RunnerRequest;
  started: bigint;
}

/**
 * How a request ended, for record(): it failed (why, in the statistics'
 * failure reasons), was answered from the response cache, or ran and
 * succeeded (its scheduler's result and the batch size it counted as).
 */
type RequestOutcome = { failed: FailureReason } | { cached: true } | { ran: ScheduledResult; batchSize: number };

function isDecoupledConfig(served: ServedVersion): boolean {
  return served.config.model_transaction_policy?.decoupled === true;
}

function wireDataType(configType: string | undefined): string {
  if (configType === "TYPE_STRING") return "BYTES";
  return configType?.startsWith("TYPE_") ? configType.slice(5) : (configType ?? "");
}

function elapsedNs(started: bigint): number {
  return Number(process.hrtime.bigint() - started);
}

function failureReason(error: OperonError): FailureReason {
  if (error.kind === "CANCELLED") return "CANCELED";
  if (error.kind === "UNAVAILABLE") return "REJECTED";
  if (error.kind === "INVALID_ARG") return "OTHER";
  return "BACKEND";
}

/** The tenant an operator step runs as (its operator request's, operator-tenant.ts) while tenant shares are on. */
function stepTenant(shares: TenantShares | undefined): { tenantId?: string } {
  if (shares?.enabled !== true) return {};
  const tenantId = operatorTenant.getStore();
  return tenantId !== undefined ? { tenantId } : {};
}

/** A traced request's timings: the durations its statistics record, and an operator's steps that ran. */
function timingsOf(result: ScheduledResult): RequestTimings {
  const steps: Array<NonNullable<RequestTimings["steps"]>[number]> = [];
  for (const record of result.steps ?? []) {
    if (record.startedAt === undefined) continue;
    steps.push({
      step: record.step,
      ...(record.model !== undefined ? { model: record.model } : {}),
      status: record.status,
      startedAtMs: record.startedAt,
      endedAtMs: record.endedAt ?? record.startedAt,
    });
  }
  return { queueNs: result.queueNs, ...result.timing, ...(steps.length > 0 ? { steps } : {}) };
}

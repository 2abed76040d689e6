import { asOperonError, OperonError } from "@operon/protocol/errors";
import type {
  InferRequest,
  InferResponse,
  ModelLoadOptions,
  ModelMetadata,
  ModelStatistics,
  ModelUnloadOptions,
  RepositoryIndexEntry,
  ServerMetadata,
} from "@operon/protocol/inference";
import type { Tensor } from "@operon/protocol/tensor";
import type { InferenceEngine, OperatorInfo } from "./engine-api.js";
import type { FailureReason } from "./metrics.js";
import type { ModelManager, ServedVersion } from "./model-manager.js";
import { resolveReshape, validateInferRequest } from "./request-validation.js";
import { responseCacheKey, type ResponseCache } from "./response-cache.js";
import { priorityLevelOf, queueTimeoutNsOf } from "./scheduling/scheduler-policy.js";

/** The protocol extensions this server implements, exactly (server metadata lists these). */
export const SERVER_EXTENSIONS = [
  "binary_tensor_data",
  "model_repository",
  "model_configuration",
  "statistics",
  "schedule_policy",
  "parameters",
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
    private readonly info: { version: string; strictReadiness: boolean; responseCache?: ResponseCache | undefined },
  ) {
    // Operator steps (ensembles, registered DAGs) call models through this engine's own infer, in process:
    // the step model's validation, scheduler (batching), statistics and cache apply as for any request.
    manager.setStepRunner((model, version, inputs, outputNames, signal, parameters) =>
      this.infer({
        modelName: model,
        ...(version !== undefined ? { modelVersion: version } : {}),
        parameters: parameters ?? {},
        inputs,
        outputs: outputNames.map((name) => ({ name })),
        signal,
      }),
    );
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

  async infer(request: InferRequest): Promise<InferResponse> {
    const started = process.hrtime.bigint();
    const served = this.manager.resolve(request.modelName, request.modelVersion);
    this.inFlight += 1;
    try {
      let scheduled;
      try {
        const validated = validateInferRequest(served.signature, request);
        const policy = served.instances.policy;
        const level = priorityLevelOf(policy, request.parameters);
        scheduled = {
          ...validated,
          level,
          timeoutNs: queueTimeoutNsOf(policy, level, request.parameters),
          ...(request.signal !== undefined ? { signal: request.signal } : {}),
          parameters: request.parameters,
        };
      } catch (error) {
        served.stats.recordFailure(elapsedNs(started), "OTHER");
        throw error;
      }
      // Response cache (Triton): a hit answers without scheduling; a miss runs and inserts the response.
      const cache = this.responseCacheFor(served);
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
          served.stats.recordCachedSuccess(elapsedNs(started));
          const response: InferResponse = { modelName: request.modelName, modelVersion: served.version, outputs: hit.outputs };
          if (request.id !== undefined && request.id !== "") response.id = request.id;
          return response;
        }
      }
      try {
        const result = await served.instances.execute(scheduled);
        const outputs = restoreOutputShapes(served, result.outputs, scheduled.outputNames);
        if (cache !== undefined && cacheKey !== undefined) {
          const insertStarted = process.hrtime.bigint();
          cache.set(cacheKey, { outputs });
          served.stats.recordCacheMiss(cacheMissNs + elapsedNs(insertStarted));
          cacheKey = undefined;
        }
        served.stats.recordSuccess(elapsedNs(started), result.queueNs, result.timing, scheduled.batchSize);
        const response: InferResponse = { modelName: request.modelName, modelVersion: served.version, outputs };
        if (request.id !== undefined && request.id !== "") response.id = request.id;
        return response;
      } catch (error) {
        if (cacheKey !== undefined) served.stats.recordCacheMiss(cacheMissNs);
        const failure = asOperonError(error);
        served.stats.recordFailure(elapsedNs(started), failureReason(failure));
        throw failure;
      }
    } finally {
      this.inFlight -= 1;
    }
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

  modelStatistics(name?: string, version?: string): ModelStatistics[] {
    return this.manager.servedVersions(name, version).map((served) => served.stats.snapshot());
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

/** Orders outputs as requested (else as configured) and maps reshaped outputs back to their config dims. */
function restoreOutputShapes(served: ServedVersion, outputs: Tensor[], requested: string[] | undefined): Tensor[] {
  const configs = served.signature.outputs;
  const order = requested ?? configs.map((output) => output.name);
  const byName = new Map(outputs.map((output) => [output.name, output]));
  const ordered: Tensor[] = [];
  for (const name of order) {
    const tensor = byName.get(name);
    if (tensor === undefined) continue;
    const config = configs.find((output) => output.name === name);
    if (config?.reshape !== undefined) {
      const batched = served.signature.maxBatchSize > 0;
      const modelShape = batched ? tensor.shape.slice(1) : tensor.shape;
      const dims = resolveReshape(config.dims, modelShape);
      ordered.push({ ...tensor, shape: batched ? [tensor.shape[0]!, ...dims] : dims });
    } else {
      ordered.push(tensor);
    }
  }
  for (const tensor of outputs) if (!order.includes(tensor.name)) ordered.push(tensor);
  return ordered;
}

import { OperonError } from "@operon/protocol/errors";
import type { ModelLoadOptions, RepositoryIndexEntry } from "@operon/protocol/inference";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import type { OperatorSpec } from "@operon/operator-spec/operator-spec-schema";
import type { OperatorProblem } from "@operon/protocol/admin";
import { PeriodicTask } from "@operon/protocol/periodic-task";
import type { Logger } from "../observability/logger.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import {
  ModelInstances,
  type InstanceBlsHandler,
  type InstanceWorkerInfo,
  type ModelInstancesOptions,
} from "../instances/model-instances.js";
import type { RunModel } from "../operators/dag-executor.js";
import { ensembleStepModels, isEnsembleConfig } from "../operators/ensemble-operator.js";
import { OperatorRegistry, type ServedOperator } from "../operators/operator-registry.js";
import { operatorServingTable } from "../operators/operator-serving-table.js";
import { deviceResidentGpu } from "./device-placement.js";
import { ServedModels, type ServedVersion } from "../operators/served-models.js";
import { ModelLifecycle } from "./model-lifecycle.js";
import { ModelScaling, type ModelScalingState, type ScalingKind } from "./model-scaling.js";
import { NativeBackendsUnavailableError, type NativeBackendOptions } from "./native-backend-resolver.js";
import type { ParkedModelPolicy } from "./parked-models.js";
import { findModelDir, listRepositoryModels, modelFingerprint, readConfigText } from "./repository-scanner.js";
import type { ResourceLimits } from "./resource-limits.js";
import { clearUploads } from "./upload-staging.js";

/**
 * The model registry: which models exist, their state per version, the
 * repository poller and the index, under Triton's model control modes. The
 * life cycle of one model (load/unload/reload) is model-lifecycle.ts, the
 * resource scheduler's levers (rescale, park) model-scaling.ts, and the
 * operators served beside the models operators/operator-serving-table.ts.
 *
 * Loads of one model are serialized; different models load concurrently.
 */
export type ModelControlMode = "none" | "poll" | "explicit";

export interface ModelManagerOptions {
  repositories: string[];
  controlMode: ModelControlMode;
  strictModelConfig: boolean;
  uploadDir: string;
  maxUploadBytes: number;
  defaultMaxBatchSize: number;
  /** Whether the server has a response cache (--cache-config); models that enable response_cache without one get a warning at load. */
  responseCacheEnabled?: boolean;
  instances: ModelInstancesOptions;
  logger: Logger;
  metrics: GatewayMetrics;
  /** How long an unload waits for in-flight requests before stopping workers. */
  unloadDrainMs?: number;
  /** The admin's limits on instances and threads (--max-instances-per-model, ...); unset = none. */
  resourceLimits?: ResourceLimits;
  /** What a request for a model the resource scheduler unloaded gets (see parked-models.ts); default DEFAULT_PARKED_MODEL_POLICY. */
  parkedModels?: ParkedModelPolicy;
  /** Native (Triton C++ API) backends: --backend-directory and --backend-config. */
  nativeBackends?: NativeBackendOptions;
  /** --allow-native-uploads: loads whose uploaded files bring native code are refused without it (native-upload-policy.ts). */
  allowNativeUploads?: boolean;
}

export type { ServedOperator, ServedVersion };

export class ModelManager {
  private readonly models: ServedModels;
  private pollTimer: PeriodicTask | undefined;
  private stopped = false;
  /** Registered operators and ensembles: their rules and runners (the served-model table holds their served versions). */
  private readonly operators: OperatorRegistry;
  /** How models' BLS calls run: the engine's infer, set by the engine (setBlsHandler). */
  private blsHandler: InstanceBlsHandler | undefined;
  private readonly lifecycle: ModelLifecycle;
  private readonly scaling: ModelScaling;

  constructor(private readonly options: ModelManagerOptions) {
    this.models = new ServedModels({
      metrics: options.metrics,
      ...(options.unloadDrainMs !== undefined ? { unloadDrainMs: options.unloadDrainMs } : {}),
    });
    // What every version's instances start with: the given options plus BLS routed through blsHandler.
    const instanceOptions: ModelInstancesOptions = {
      ...options.instances,
      // Looked up per call: the engine attaches itself after the manager exists.
      blsHandler: (call, depth) => {
        if (this.blsHandler === undefined) {
          return Promise.reject(
            new OperonError("UNAVAILABLE", "BLS is not available: no engine is attached to the model manager"),
          );
        }
        return this.blsHandler(call, depth);
      },
    };
    this.operators = new OperatorRegistry(
      operatorServingTable({
        models: this.models,
        metrics: options.metrics,
        logger: options.logger,
        isStopped: () => this.stopped,
        assertExplicitMode: (action, subject) => this.assertExplicitMode(action, subject),
        signatureOf: (model, version) => {
          try {
            return this.resolve(model, version).signature;
          } catch {
            return undefined;
          }
        },
        deviceOf: (model, version) => {
          try {
            return deviceResidentGpu(this.resolve(model, version).config);
          } catch {
            return undefined;
          }
        },
        hasRepositoryFolder: async (name) => (await findModelDir(options.repositories, name)) !== undefined,
      }),
      { metrics: options.metrics },
    );
    this.lifecycle = new ModelLifecycle({
      models: this.models,
      repositories: options.repositories,
      strictModelConfig: options.strictModelConfig,
      uploadDir: options.uploadDir,
      maxUploadBytes: options.maxUploadBytes,
      defaultMaxBatchSize: options.defaultMaxBatchSize,
      instances: instanceOptions,
      operators: () => this.operators.hooks(),
      logger: options.logger,
      metrics: options.metrics,
      isStopped: () => this.stopped,
      onLoaded: (name) => this.scaling.unpark(name),
      ...(options.responseCacheEnabled !== undefined ? { responseCacheEnabled: options.responseCacheEnabled } : {}),
      ...(options.resourceLimits !== undefined ? { resourceLimits: options.resourceLimits } : {}),
      ...(options.nativeBackends !== undefined ? { nativeBackends: options.nativeBackends } : {}),
      ...(options.allowNativeUploads !== undefined ? { allowNativeUploads: options.allowNativeUploads } : {}),
    });
    this.scaling = new ModelScaling({
      models: this.models,
      lifecycle: this.lifecycle,
      logger: options.logger,
      isStopped: () => this.stopped,
      ...(options.resourceLimits !== undefined ? { resourceLimits: options.resourceLimits } : {}),
      ...(options.parkedModels !== undefined ? { parkedModels: options.parkedModels } : {}),
      ...(options.unloadDrainMs !== undefined ? { unloadDrainMs: options.unloadDrainMs } : {}),
      ...(options.instances.gpus !== undefined ? { gpus: options.instances.gpus } : {}),
    });
  }

  /** Operators (ensembles, registered DAGs) run their model steps through this (the engine's own inference). */
  setStepRunner(runModel: RunModel): void {
    this.operators.setStepRunner(runModel);
  }

  /** Models' BLS calls (ctx.infer in a TypeScript model) run through this, in every worker started from now on or earlier. */
  setBlsHandler(handler: InstanceBlsHandler): void {
    this.blsHandler = handler;
  }

  get controlMode(): ModelControlMode {
    return this.options.controlMode;
  }

  /**
   * Loads the models the control mode asks for at start: every model in the
   * repositories (none, poll) or those named with --load-model (explicit;
   * "*" = all). Resolves with the names that failed to load; `hostLimited`
   * marks the failures of a model that cannot run on this host at all
   * (native backends not built) when it was loaded as one of "all models".
   */
  async loadAtStartup(loadModels: string[]): Promise<Array<{ name: string; reason: string; hostLimited?: boolean }>> {
    // Files uploaded with load requests of an earlier run serve nothing now.
    await clearUploads(this.options.uploadDir);
    const all = await listRepositoryModels(this.options.repositories);
    const names = this.options.controlMode !== "explicit" || loadModels.includes("*") ? [...all.keys()] : loadModels;
    const everyModel = this.options.controlMode !== "explicit" || loadModels.includes("*");
    const failures: Array<{ name: string; reason: string; hostLimited?: boolean }> = [];
    // Ensembles are checked against the models served when they load, so they load after them (waves: ensembles of ensembles last).
    for (const wave of await this.loadWaves(names, all)) {
      await Promise.all(
        wave.map(async (name) => {
          try {
            await this.load(name, {}, { fromControlApi: false });
          } catch (error) {
            const hostLimited = everyModel && error instanceof NativeBackendsUnavailableError;
            failures.push({ name, reason: (error as Error).message, ...(hostLimited ? { hostLimited } : {}) });
            // The index still shows it UNAVAILABLE with the reason; strict readiness does not wait for what this host cannot run.
            const entry = this.models.get(name);
            if (hostLimited && entry !== undefined) entry.loadFailed = false;
          }
        }),
      );
    }
    return failures;
  }

  /**
   * Load order: plain models first, then ensembles, each after the ensembles
   * it calls. A config that cannot be read counts as a plain model (its load
   * reports the problem).
   */
  private async loadWaves(names: string[], dirs: Map<string, string>): Promise<string[][]> {
    const plain: string[] = [];
    const ensembles = new Map<string, string[]>();
    for (const name of names) {
      const dir = dirs.get(name);
      const file = dir === undefined ? undefined : await readConfigText(dir).catch(() => undefined);
      let calls: string[] | undefined;
      try {
        const config = file === undefined ? undefined : parsePbtxt(file.text, file.path);
        if (config !== undefined && isEnsembleConfig(config)) calls = ensembleStepModels(config);
      } catch {
        calls = undefined;
      }
      if (calls === undefined) plain.push(name);
      else ensembles.set(name, calls);
    }
    const waves = [plain];
    while (ensembles.size > 0) {
      const ready = [...ensembles]
        .filter(([, calls]) => !calls.some((model) => ensembles.has(model)))
        .map(([name]) => name);
      const wave = ready.length > 0 ? ready : [...ensembles.keys()]; // a cycle: let their loads report it
      for (const name of wave) ensembles.delete(name);
      waves.push(wave);
    }
    return waves;
  }

  /** Starts the repository poller (poll mode). */
  startPolling(intervalSecs: number): void {
    if (this.options.controlMode !== "poll" || intervalSecs <= 0) return;
    this.pollTimer = new PeriodicTask(() => this.pollOnce(), {
      intervalMs: intervalSecs * 1000,
      onError: (error) => this.options.logger.error({ err: (error as Error).message }, "repository poll failed"),
    });
    this.pollTimer.start();
  }

  /** One poll pass: load new models, reload changed ones, unload removed ones. */
  async pollOnce(): Promise<void> {
    const present = await listRepositoryModels(this.options.repositories);
    for (const name of (await this.loadWaves([...present.keys()], present)).flat()) {
      if (this.scaling.isParked(name)) continue; // loads again on demand, not by the poller
      const dir = present.get(name)!;
      const entry = this.models.get(name);
      const fingerprint = await modelFingerprint(dir);
      if (entry === undefined || entry.fingerprint !== fingerprint) {
        this.options.logger.info(
          { model: name },
          entry === undefined ? "poll: new model" : "poll: model changed, reloading",
        );
        await this.load(name, {}, { fromControlApi: false }).catch(() => undefined);
      }
    }
    for (const [name, entry] of this.models.entries()) {
      if (present.has(name) || entry.upload !== undefined || entry.registeredOperator !== undefined) continue;
      if (entry.versions.size > 0) {
        this.options.logger.info({ model: name }, "poll: model removed, unloading");
        await this.unload(name, { fromControlApi: false });
      } else {
        this.models.delete(name); // it never served; forget its old failure
      }
    }
  }

  /** Registers (or replaces) an operator from its JSON spec (see OperatorRegistry.register). */
  registerOperator(raw: unknown): Promise<ServedOperator> {
    return this.operators.register(raw);
  }

  /** Dry run of registerOperator: the problems it would find, in its order; empty = it would register. */
  operatorProblems(raw: unknown): Promise<OperatorProblem[]> {
    return this.operators.problems(raw);
  }

  /** The backend instances of every served model version (operators have none), for GET /v2/operon/workers. */
  workerInstances(): Array<{ model: string; version: string; instances: InstanceWorkerInfo[] }> {
    const list: Array<{ model: string; version: string; instances: InstanceWorkerInfo[] }> = [];
    for (const entry of this.models.sorted()) {
      for (const served of [...entry.versions.values()].sort((a, b) => Number(a.version) - Number(b.version))) {
        if (served.instances instanceof ModelInstances) {
          list.push({ model: served.model, version: served.version, instances: served.instances.workerInfos() });
        }
      }
    }
    return list;
  }

  /** Removes an operator registered through the API (drains its requests first). */
  unregisterOperator(name: string): Promise<void> {
    return this.operators.unregister(name);
  }

  /** Served operators, each with the step models not ready now (an operator with any is degraded). */
  listOperators(): ServedOperator[] {
    return this.operators.list().map((operator) => ({
      ...operator,
      unreadyModels: this.unreadyStepModels(operator.spec, new Set([operator.name])),
    }));
  }

  /**
   * The models an operator's steps call that cannot serve now (unloaded,
   * failed, dead workers), also through nested operators; names with the
   * version when the step pins one.
   */
  private unreadyStepModels(spec: OperatorSpec, seen: Set<string>): string[] {
    const missing: string[] = [];
    for (const step of spec.steps) {
      if (step.kind !== "model" || seen.has(step.model)) continue;
      let served: ServedVersion;
      try {
        served = this.resolve(step.model, step.version);
      } catch {
        missing.push(step.version ? `${step.model} version ${step.version}` : step.model);
        continue;
      }
      if (served.operator !== undefined)
        missing.push(...this.unreadyStepModels(served.operator, new Set([...seen, step.model])));
    }
    return [...new Set(missing)];
  }

  /** Model control API entry points: only in explicit mode, as in Triton. */
  async loadFromApi(name: string, options: ModelLoadOptions): Promise<void> {
    this.assertExplicitMode("load");
    await this.load(name, options, { fromControlApi: true });
  }

  async unloadFromApi(name: string): Promise<void> {
    this.assertExplicitMode("unload");
    await this.unload(name, { fromControlApi: true });
    this.scaling.unpark(name); // an admin's unload stays unloaded
  }

  /** The resource scheduler's scale lever (model-scaling.ts). */
  scaleInstances(
    name: string,
    count: number,
    kind?: ScalingKind,
  ): Promise<{ model: string; from: number; to: number; kind: ScalingKind }> {
    return this.scaling.scaleInstances(name, count, kind);
  }

  /** Unloads `name` for the resource scheduler; the next request loads it again (model-scaling.ts). */
  park(name: string): Promise<void> {
    return this.scaling.park(name);
  }

  /** Models parked now (GET /v2/operon/parked). */
  parkedModels(): string[] {
    return this.scaling.parkedModels();
  }

  /** Each served model's instances now and as its config asked at load, and its queued requests; operators left out. */
  scalingState(): ModelScalingState[] {
    return this.scaling.scalingState();
  }

  /** Each served operator's requests in flight (the resource scheduler's operator demand). */
  operatorLoad(): Array<{ operator: string; inFlight: number; modelCalls: Record<string, number> }> {
    return this.scaling.operatorLoad();
  }

  /**
   * After resolve() threw: for a parked model under the "wait" policy,
   * waits (bounded) for its load and resolves again; otherwise rethrows.
   * Callers use it only in their catch branch (off the hot path).
   */
  resolveAfterLoad(error: unknown, name: string, version?: string): Promise<ServedVersion> {
    return this.scaling.resolveAfterLoad(error, () => this.resolve(name, version));
  }

  /** The version that serves a request: the given one, or the highest ready one. */
  resolve(name: string, version?: string): ServedVersion {
    const entry = this.models.get(name);
    if (entry === undefined || (entry.versions.size === 0 && entry.state === undefined)) {
      throw new OperonError("NOT_FOUND", `Request for unknown model: '${name}' is not found`);
    }
    if (version !== undefined && version !== "") {
      const served = entry.versions.get(version);
      if (served === undefined) {
        throw (
          this.scaling.parkedFailure(name) ??
          new OperonError("NOT_FOUND", `Request for unknown model: '${name}' version ${version} is not found`)
        );
      }
      if (served.instances.isDead) {
        throw new OperonError(
          "UNAVAILABLE",
          `model '${name}' version ${version} is not ready: its backend workers failed`,
        );
      }
      return served;
    }
    const ready = [...entry.versions.values()].filter((served) => !served.instances.isDead);
    if (ready.length === 0) {
      throw (
        this.scaling.parkedFailure(name) ??
        new OperonError("UNAVAILABLE", `model '${name}' is not ready${entry.reason ? `: ${entry.reason}` : ""}`)
      );
    }
    return ready.reduce((best, served) => (Number(served.version) > Number(best.version) ? served : best));
  }

  /** An operator is ready only while every model its steps call is (unreadyStepModels). */
  isModelReady(name: string, version?: string): boolean {
    try {
      const served = this.resolve(name, version);
      return served.operator === undefined || this.unreadyStepModels(served.operator, new Set([name])).length === 0;
    } catch {
      return false;
    }
  }

  /** Every served version, for statistics. */
  servedVersions(name?: string, version?: string): ServedVersion[] {
    if (name === undefined || name === "")
      return [...this.models.values()].flatMap((entry) => [...entry.versions.values()]);
    const entry = this.models.get(name);
    if (entry === undefined || entry.versions.size === 0) {
      throw new OperonError("NOT_FOUND", `requested model '${name}' is not loaded`);
    }
    if (version === undefined || version === "") return [...entry.versions.values()];
    const served = entry.versions.get(version);
    if (served === undefined)
      throw new OperonError("NOT_FOUND", `requested model '${name}' version ${version} is not loaded`);
    return [served];
  }

  /** All versions of a model that serve now (ascending). */
  versionsOf(name: string): string[] {
    const entry = this.models.get(name);
    return entry === undefined ? [] : [...entry.versions.keys()].sort((a, b) => Number(a) - Number(b));
  }

  /** True when every model that was asked to load is serving. */
  allModelsReady(): boolean {
    for (const entry of this.models.values()) {
      if (entry.loadFailed === true) return false;
      if (entry.state === "LOADING") return false;
      for (const served of entry.versions.values()) if (served.instances.isDead) return false;
    }
    return true;
  }

  async repositoryIndex(readyOnly: boolean): Promise<RepositoryIndexEntry[]> {
    const names = new Set<string>([
      ...(await listRepositoryModels(this.options.repositories)).keys(),
      ...this.models.names(),
    ]);
    const index: RepositoryIndexEntry[] = [];
    for (const name of [...names].sort()) {
      const entry = this.models.get(name);
      const rows: RepositoryIndexEntry[] = [];
      if (entry !== undefined) {
        for (const served of [...entry.versions.values()].sort((a, b) => Number(a.version) - Number(b.version))) {
          // An operator whose step models cannot serve is not READY here either: the index, GET …/ready
          // (isModelReady) and the console say the same thing (issue 27, item 4).
          const unready = served.operator !== undefined ? this.unreadyStepModels(served.operator, new Set([name])) : [];
          rows.push({
            name,
            version: served.version,
            state:
              served.instances.isDead || unready.length > 0
                ? "UNAVAILABLE"
                : entry.state === "LOADING" && entry.versions.size === 0
                  ? "LOADING"
                  : "READY",
            reason: served.instances.isDead
              ? "backend workers failed to restart"
              : unready.length > 0
                ? `step model${unready.length === 1 ? "" : "s"} not ready: ${unready.join(", ")}`
                : "",
            ...(entry.warnings !== undefined ? { warnings: entry.warnings } : {}),
          });
        }
        for (const version of [...entry.unloadedVersions].sort((a, b) => Number(a) - Number(b))) {
          if (!entry.versions.has(version)) rows.push({ name, version, state: "UNAVAILABLE", reason: "unloaded" });
        }
        if (
          entry.state !== undefined &&
          entry.state !== "READY" &&
          (entry.state !== "UNAVAILABLE" || entry.reason !== "unloaded")
        ) {
          rows.push({ name, state: entry.state, reason: entry.reason });
        }
      }
      if (rows.length === 0) rows.push({ name });
      index.push(...rows);
    }
    return readyOnly ? index.filter((row) => row.state === "READY") : index;
  }

  /** A shutdown begins: no backend worker is restarted from now on (see ModelInstances.haltRestarts). */
  haltRestarts(): void {
    for (const entry of this.models.values())
      for (const served of entry.versions.values()) served.instances.haltRestarts?.();
  }

  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    this.haltRestarts();
    await this.pollTimer?.stop();
    // Operators first: their running requests still need their step models.
    const stopAll = (operators: boolean): Promise<unknown> =>
      Promise.all(
        [...this.models.values()].map(async (entry) => {
          await entry.pending.catch(() => undefined);
          const versions = [...entry.versions.values()].filter(
            (served) => (served.operator !== undefined) === operators,
          );
          await Promise.all(versions.map((served) => served.instances.stop(timeoutMs)));
          for (const served of versions) entry.versions.delete(served.version);
        }),
      );
    await stopAll(true);
    await stopAll(false);
    await Promise.all([...this.models.values()].map((entry) => entry.upload?.discard()));
    await clearUploads(this.options.uploadDir);
  }

  private assertExplicitMode(action: string, subject = `explicit model ${action}`): void {
    if (this.options.controlMode === "explicit") return;
    const why = this.options.controlMode === "poll" ? "polling is enabled" : "model control mode is 'none'";
    throw new OperonError(
      "UNSUPPORTED",
      `${subject} is not allowed because ${why}; start the server with --model-control-mode=explicit`,
    );
  }

  private load(name: string, options: ModelLoadOptions, context: { fromControlApi: boolean }): Promise<void> {
    return this.lifecycle.load(name, options, context);
  }

  private unload(name: string, context: { fromControlApi: boolean }): Promise<void> {
    return this.lifecycle.unload(name, context);
  }
}

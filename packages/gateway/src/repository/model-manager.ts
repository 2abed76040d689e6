import { instanceCountOf, type ResourceLimits } from "./resource-limits.js";
import { hostGpus } from "../instances/gpu-inventory.js";
import { OperonError, asOperonError } from "@operon/protocol/errors";
import type { ModelLoadOptions, ModelState, RepositoryIndexEntry } from "@operon/protocol/inference";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { parsePbtxt } from "@operon/model-config/pbtxt-parser";
import type { Logger } from "../observability/logger.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import {
  ModelInstances,
  type InstanceBlsHandler,
  type InstanceWorkerInfo,
  type ModelInstancesOptions,
} from "../instances/model-instances.js";
import { ModelVersionStats } from "../observability/model-stats.js";
import {
  findModelDir,
  isValidModelName,
  listRepositoryModels,
  modelFingerprint,
  readConfigText,
} from "./repository-scanner.js";
import type { OperatorProblem } from "@operon/protocol/admin";
import { prepareModel, type PreparedVersion } from "./model-loader.js";
import { NativeBackendsUnavailableError, type NativeBackendOptions } from "./native-backend-resolver.js";
import { assertNativeUploadAllowed, nativeUploadOf } from "./native-upload-policy.js";
import type { RunModel } from "../operators/dag-executor.js";
import { ensembleStepModels, isEnsembleConfig } from "../operators/ensemble-operator.js";
import type { OperatorRunner } from "../operators/operator-runner.js";
import type { OperatorSpec } from "@operon/operator-spec/operator-spec-schema";
import { operatorModelConfig } from "../operators/operator-validation.js";
import {
  OperatorRegistry,
  type OperatorModelTable,
  type OperatorVersion,
  type ServedOperator,
} from "../operators/operator-registry.js";
import type { VersionRunner } from "../scheduling/version-runner.js";
import { signatureFromConfig, type ServedModelSignature } from "../signature/model-signature.js";
import { clearUploads, stageUpload, type StagedUpload } from "./upload-staging.js";
import {
  DEFAULT_PARKED_MODEL_POLICY,
  ModelParkedError,
  PARKED_RELOAD_BACKOFF_MS,
  type ParkedModelPolicy,
} from "./parked-models.js";
import { PeriodicTask } from "@operon/protocol/periodic-task";

/**
 * The model registry: which models exist, their state per version, and the
 * load / unload / reload life cycle under Triton's model control modes.
 *
 * Loads of one model are serialized; different models load concurrently. A
 * reload keeps the old versions serving until the new ones are ready, and a
 * failed reload leaves the old ones serving (Triton's behaviour). A failed
 * load never takes other models down: it shows as UNAVAILABLE with its reason.
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

export interface ServedVersion {
  model: string;
  version: string;
  config: ModelConfigJson;
  signature: ServedModelSignature;
  /** Backend instances (ModelInstances) or, for an operator, its DAG runner. */
  instances: VersionRunner;
  stats: ModelVersionStats;
  /** Set when this version is an operator (an ensemble, or registered through /v2/operators). */
  operator?: OperatorSpec;
  /** The instance count its config asked for at load, once scaleInstances changed it. */
  configuredInstances?: number;
}

export type { ServedOperator };

interface ModelEntry {
  name: string;
  /** State of the last load/unload attempt when no version is serving. */
  state: ModelState | undefined;
  reason: string;
  versions: Map<string, ServedVersion>;
  /** Versions unloaded, shown in the index as UNAVAILABLE "unloaded". */
  unloadedVersions: Set<string>;
  /** Folder served from, and its fingerprint (poll mode). */
  dir: string | undefined;
  fingerprint: string | undefined;
  upload: StagedUpload | undefined;
  /** Tail of the serialized load/unload chain for this model. */
  pending: Promise<void>;
  /** Set for an operator registered through the API (it has no folder in the repositories). */
  registeredOperator?: OperatorSpec;
  /**
   * The last load failed and nothing serves: strict readiness counts it
   * until the model is unloaded or loaded again (the index keeps reporting
   * the failure's reason either way).
   */
  loadFailed?: boolean;
}

export class ModelManager {
  private readonly models = new Map<string, ModelEntry>();
  private pollTimer: PeriodicTask | undefined;
  private stopped = false;
  /** Registered operators and ensembles: their rules and runners (this manager holds their served versions). */
  private readonly operators: OperatorRegistry;
  /** How models' BLS calls run: the engine's infer, set by the engine (setBlsHandler). */
  private blsHandler: InstanceBlsHandler | undefined;
  /** What every version's instances start with: the given options plus BLS routed through blsHandler. */
  private readonly instanceOptions: ModelInstancesOptions;
  /** Models the resource scheduler unloaded (park): a request loads them again; the load under way, if any. */
  private readonly parked = new Map<string, { loading: Promise<void> | undefined; retryAt: number }>();

  constructor(private readonly options: ModelManagerOptions) {
    this.instanceOptions = {
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
    this.operators = new OperatorRegistry(this.operatorTable(), { metrics: options.metrics });
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
      if (this.parked.has(name)) continue; // loads again on demand, not by the poller
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
    for (const [name, entry] of this.models) {
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
    for (const entry of [...this.models.values()].sort((a, b) => a.name.localeCompare(b.name))) {
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

  /** Every served operator version: registered ones and ensembles. */
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
    this.parked.delete(name); // an admin's unload stays unloaded
  }

  /**
   * The resource scheduler's scale lever: every served version of `name`
   * runs `count` instances from now on, grown or shrunk in place
   * (ModelInstances.resize: no request is dropped), and its config's
   * instance_group count says so. Checked against the admin's limits like
   * a load. Models with more than one instance group, and operators, are
   * refused (which group would change is not the scheduler's to guess).
   */
  async scaleInstances(name: string, count: number): Promise<{ model: string; from: number; to: number }> {
    if (!Number.isInteger(count) || count < 1 || count > 1024) {
      throw new OperonError(
        "INVALID_ARG",
        `instance count must be an integer from 1 to 1024, got ${JSON.stringify(count)}`,
      );
    }
    const entry = this.models.get(name);
    if (entry === undefined || entry.versions.size === 0)
      throw new OperonError("NOT_FOUND", `model '${name}' is not loaded`);
    const limits = this.options.resourceLimits;
    if (limits !== undefined && count > limits.maxInstancesPerModel) {
      throw new OperonError(
        "INVALID_ARG",
        `model '${name}': ${count} instances asked; this server allows at most ${limits.maxInstancesPerModel} per model (--max-instances-per-model)`,
      );
    }
    let from = 0;
    await this.serialize(entry, async () => {
      const versions = [...entry.versions.values()];
      if (versions.length === 0) throw new OperonError("NOT_FOUND", `model '${name}' is not loaded`);
      for (const served of versions) {
        if (!(served.instances instanceof ModelInstances))
          throw new OperonError("INVALID_ARG", `'${name}' is an operator: it runs no instances of its own`);
        if ((served.config.instance_group ?? []).length > 1) {
          throw new OperonError(
            "UNSUPPORTED",
            `model '${name}' has ${served.config.instance_group!.length} instance groups; only models with one instance group are scaled`,
          );
        }
      }
      if (limits !== undefined && this.instancesExcept(name) + count * versions.length > limits.maxInstancesPerHost) {
        throw new OperonError(
          "INVALID_ARG",
          `model '${name}': ${count} instances per version would make ${this.instancesExcept(name) + count * versions.length} on this server, over the limit of ${limits.maxInstancesPerHost} (--max-instances)`,
        );
      }
      from = instanceCountOf(versions[0]!.config);
      const gpuCount = (this.options.instances.gpus ?? hostGpus()).count;
      for (const served of versions) {
        const pool = served.instances as ModelInstances;
        served.configuredInstances ??= instanceCountOf(served.config);
        const group = served.config.instance_group?.[0];
        const groupName = group?.name || `${name}_0`;
        // A KIND_GPU group's count is per GPU (Triton's rule): `count` instances in all are count / GPUs per GPU.
        const perRound = gpusPerRound(group, gpuCount);
        if (count % perRound !== 0) {
          throw new OperonError(
            "INVALID_ARG",
            `model '${name}' runs one instance per round on each of its ${perRound} GPUs: its instance count must be a multiple of ${perRound}, got ${count}`,
          );
        }
        const rescaled = (total: number): typeof served.config => ({
          ...served.config,
          instance_group: [{ ...(group ?? { kind: "KIND_CPU" }), count: Math.max(1, Math.floor(total / perRound)) }],
        });
        try {
          await pool.resize(
            count,
            (index) => `${groupName}_${index}`,
            this.options.unloadDrainMs ?? 30_000,
            rescaled(count) as Record<string, unknown>,
          );
        } finally {
          // The config shows what runs (also after a partly failed grow).
          served.config = rescaled(pool.instanceCount);
        }
      }
      this.options.logger.info({ model: name, from, to: count }, "model instances rescaled");
    });
    return { model: name, from, to: count };
  }

  /**
   * Unloads `name` for the resource scheduler (memory is short and the
   * model is idle): like an unload, but the next request loads it again
   * (parked-models.ts). Allowed in every model control mode: the model
   * stays available to clients.
   */
  async park(name: string): Promise<void> {
    const entry = this.models.get(name);
    if (entry === undefined || entry.versions.size === 0)
      throw new OperonError("NOT_FOUND", `model '${name}' is not loaded`);
    if (
      entry.registeredOperator !== undefined ||
      [...entry.versions.values()].some((served) => served.operator !== undefined)
    ) {
      throw new OperonError(
        "INVALID_ARG",
        `'${name}' is an operator: only models are unloaded by the resource scheduler`,
      );
    }
    if (entry.upload !== undefined) {
      throw new OperonError(
        "INVALID_ARG",
        `model '${name}' was loaded from uploaded files, which an unload discards: it cannot be loaded again on demand`,
      );
    }
    // Parked first: a request that comes during the unload loads it again after it (loads and unloads are serialized).
    this.parked.set(name, { loading: undefined, retryAt: 0 });
    await this.unload(name, { fromControlApi: false });
    if (entry.state === "UNAVAILABLE")
      entry.reason = "unloaded by the resource scheduler; the next request loads it again";
  }

  /** Models parked now (GET /v2/operon/parked). */
  parkedModels(): string[] {
    return [...this.parked.keys()].sort();
  }

  /** Each served model's instances now and as its config asked at load (the most over its versions), and its requests waiting in queue; operators left out. */
  scalingState(): Array<{ model: string; instances: number; configuredInstances: number; queued: number }> {
    const list: Array<{ model: string; instances: number; configuredInstances: number; queued: number }> = [];
    for (const entry of [...this.models.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      const pools = [...entry.versions.values()].filter((served) => served.instances instanceof ModelInstances);
      if (pools.length === 0) continue;
      list.push({
        model: entry.name,
        instances: Math.max(...pools.map((served) => (served.instances as ModelInstances).instanceCount)),
        configuredInstances: Math.max(
          ...pools.map((served) => served.configuredInstances ?? instanceCountOf(served.config)),
        ),
        queued: pools.reduce((sum, served) => sum + (served.instances as ModelInstances).queuedCount, 0),
      });
    }
    return list;
  }

  /**
   * The failure branch of a lookup: for a parked model, starts its load
   * (once; again only PARKED_RELOAD_BACKOFF_MS after a failed one) and
   * returns the ModelParkedError to throw; undefined for any other model.
   */
  private parkedFailure(name: string): ModelParkedError | undefined {
    const parked = this.parked.get(name);
    if (parked === undefined) return undefined;
    const policy = this.options.parkedModels ?? DEFAULT_PARKED_MODEL_POLICY;
    if (parked.loading === undefined && Date.now() >= parked.retryAt && !this.stopped) {
      this.options.logger.info({ model: name }, "request for a parked model: loading it again");
      parked.loading = this.load(name, {}, { fromControlApi: false }).then(
        () => {
          if (this.parked.get(name) === parked) this.parked.delete(name);
        },
        (error: unknown) => {
          parked.loading = undefined;
          parked.retryAt = Date.now() + PARKED_RELOAD_BACKOFF_MS;
          this.options.logger.warn(
            { model: name, err: (error as Error).message },
            "loading a parked model on demand failed",
          );
        },
      );
    }
    return new ModelParkedError(name, policy.retryAfterSecs, parked.loading ?? Promise.resolve());
  }

  /**
   * After resolve() threw: for a parked model under the "wait" policy,
   * waits (bounded) for its load and resolves again; otherwise rethrows.
   * Callers use it only in their catch branch (off the hot path).
   */
  async resolveAfterLoad(error: unknown, name: string, version?: string): Promise<ServedVersion> {
    const policy = this.options.parkedModels ?? DEFAULT_PARKED_MODEL_POLICY;
    if (!(error instanceof ModelParkedError) || policy.mode !== "wait") throw error;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<"expired">((resolve) => (timer = setTimeout(() => resolve("expired"), policy.waitMs)));
    try {
      if ((await Promise.race([error.ready.then(() => "loaded" as const), expired])) === "expired") throw error;
    } finally {
      clearTimeout(timer);
    }
    try {
      return this.resolve(name, version);
    } catch (again) {
      throw again instanceof ModelParkedError ? again : error;
    }
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
          this.parkedFailure(name) ??
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
        this.parkedFailure(name) ??
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
  /** Backend instances of every served model but `name` (operators run none). */
  private instancesExcept(name: string): number {
    let count = 0;
    for (const entry of this.models.values()) {
      if (entry.name === name) continue;
      for (const served of entry.versions.values())
        if (served.operator === undefined) count += instanceCountOf(served.config);
    }
    return count;
  }

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
      ...this.models.keys(),
    ]);
    const index: RepositoryIndexEntry[] = [];
    for (const name of [...names].sort()) {
      const entry = this.models.get(name);
      const rows: RepositoryIndexEntry[] = [];
      if (entry !== undefined) {
        for (const served of [...entry.versions.values()].sort((a, b) => Number(a.version) - Number(b.version))) {
          rows.push({
            name,
            version: served.version,
            state: served.instances.isDead
              ? "UNAVAILABLE"
              : entry.state === "LOADING" && entry.versions.size === 0
                ? "LOADING"
                : "READY",
            reason: served.instances.isDead ? "backend workers failed to restart" : "",
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

  /** The view of this manager's models the operator registry works on. */
  private operatorTable(): OperatorModelTable {
    return {
      isStopped: () => this.stopped,
      assertExplicitMode: (action, subject) => this.assertExplicitMode(action, subject),
      signatureOf: (model, version) => {
        try {
          return this.resolve(model, version).signature;
        } catch {
          return undefined;
        }
      },
      isModelName: async (name) => {
        const existing = this.models.get(name);
        return (
          (existing !== undefined && existing.registeredOperator === undefined) ||
          (await findModelDir(this.options.repositories, name)) !== undefined
        );
      },
      isRegisteredOperator: (name) => this.models.get(name)?.registeredOperator !== undefined,
      isKnown: (name) => this.models.has(name),
      operatorSpecsOf: (model) =>
        [...(this.models.get(model)?.versions.values() ?? [])].flatMap((served) =>
          served.operator !== undefined ? [served.operator] : [],
        ),
      operatorVersions: () => {
        const list: OperatorVersion[] = [];
        for (const entry of [...this.models.values()].sort((a, b) => a.name.localeCompare(b.name))) {
          for (const served of [...entry.versions.values()].sort((a, b) => Number(a.version) - Number(b.version))) {
            if (served.operator === undefined) continue;
            list.push({
              name: entry.name,
              version: served.version,
              registered: entry.registeredOperator !== undefined,
              spec: served.operator,
            });
          }
        }
        return list;
      },
      operatorSlot: (name) => {
        const existing = this.models.get(name);
        return (spec, runner) => this.serveOperator(existing ?? this.entry(name), spec, runner);
      },
      removeOperator: (name) => this.removeOperator(name),
    };
  }

  /** Serves a registered operator's runner as version 1 of its model, after the model's earlier loads/unloads. */
  private serveOperator(entry: ModelEntry, spec: OperatorSpec, runner: OperatorRunner): Promise<void> {
    return this.serialize(entry, async () => {
      const config = operatorModelConfig(spec);
      const stats = entry.versions.get("1")?.stats ?? new ModelVersionStats(spec.name, "1", this.options.metrics);
      runner.onExecution = (batchSize, timing) => stats.recordExecution(batchSize, timing);
      const retired = [...entry.versions.values()];
      entry.versions = new Map([
        [
          "1",
          {
            model: spec.name,
            version: "1",
            config,
            signature: signatureFromConfig(config),
            instances: runner,
            stats,
            operator: spec,
          },
        ],
      ]);
      entry.registeredOperator = spec;
      entry.loadFailed = false;
      entry.state = "READY";
      entry.reason = "";
      this.models.set(spec.name, entry); // again: an unregister queued before this one removed it
      this.options.logger.info(
        { operator: spec.name, steps: spec.steps.length, replaced: retired.length > 0 },
        "operator registered",
      );
      await Promise.all(retired.map((served) => this.retire(served, true)));
    });
  }

  /** Stops serving a registered operator (the registry checked that it is one). */
  private removeOperator(name: string): Promise<void> {
    const entry = this.models.get(name)!;
    return this.serialize(entry, async () => {
      const retired = [...entry.versions.values()];
      entry.versions = new Map();
      if (this.models.get(name) === entry) this.models.delete(name);
      await Promise.all(retired.map((served) => this.retire(served, false)));
      this.options.logger.info({ operator: name }, "operator unregistered");
    });
  }

  private entry(name: string): ModelEntry {
    let entry = this.models.get(name);
    if (entry === undefined) {
      entry = {
        name,
        state: undefined,
        reason: "",
        versions: new Map(),
        unloadedVersions: new Set(),
        dir: undefined,
        fingerprint: undefined,
        upload: undefined,
        pending: Promise.resolve(),
      };
      this.models.set(name, entry);
    }
    return entry;
  }

  /** Runs fn after every earlier load/unload of the same model has settled. */
  private serialize(entry: ModelEntry, fn: () => Promise<void>): Promise<void> {
    const run = entry.pending.catch(() => undefined).then(fn);
    entry.pending = run.catch(() => undefined);
    return run;
  }

  private async load(name: string, options: ModelLoadOptions, context: { fromControlApi: boolean }): Promise<void> {
    if (this.stopped) throw new OperonError("UNAVAILABLE", "server is shutting down");
    if (!isValidModelName(name)) throw new OperonError("INVALID_ARG", `'${name}' is not a valid model name`);
    if (options.files !== undefined && options.files.size > 0 && options.config === undefined) {
      throw new OperonError(
        "INVALID_ARG",
        `load of model '${name}' with file parameters needs a 'config' parameter as well`,
      );
    }
    assertNativeUploadAllowed(name, nativeUploadOf(options), this.options.allowNativeUploads === true);
    const upload =
      options.files !== undefined && options.files.size > 0
        ? await stageUpload(this.options.uploadDir, name, options.files, {
            maxUploadBytes: this.options.maxUploadBytes,
          })
        : undefined;
    const dir = upload?.dir ?? (await findModelDir(this.options.repositories, name));
    if (dir === undefined) {
      throw new OperonError(
        "NOT_FOUND",
        `failed to load '${name}': no model folder of that name in the model repositories (${this.options.repositories.join(", ")})`,
      );
    }
    if (this.models.get(name)?.registeredOperator !== undefined) {
      await upload?.discard();
      throw new OperonError(
        "ALREADY_EXISTS",
        `'${name}' is an operator registered through /v2/operators; remove it first (DELETE /v2/operators/${name})`,
      );
    }
    const entry = this.entry(name);
    return this.serialize(entry, async () => {
      const previousState = entry.state;
      if (entry.versions.size === 0) entry.state = "LOADING";
      let prepared: PreparedVersion[] | undefined;
      try {
        const fingerprint = upload === undefined ? await modelFingerprint(dir) : undefined;
        prepared = await prepareModel(name, dir, options.config, {
          strictModelConfig: this.options.strictModelConfig,
          defaultMaxBatchSize: this.options.defaultMaxBatchSize,
          instances: this.instanceOptions,
          operators: this.operators.hooks(),
          trustedFolder: upload === undefined,
          ...(this.options.nativeBackends !== undefined ? { native: this.options.nativeBackends } : {}),
          ...(this.options.resourceLimits !== undefined
            ? { limits: { limits: this.options.resourceLimits, instancesOfOtherModels: this.instancesExcept(name) } }
            : {}),
        });
        const next = new Map<string, ServedVersion>();
        for (const version of prepared) {
          const stats =
            entry.versions.get(version.version)?.stats ??
            new ModelVersionStats(name, version.version, this.options.metrics);
          version.instances.onExecution = (batchSize, timing) => stats.recordExecution(batchSize, timing);
          next.set(version.version, {
            model: name,
            version: version.version,
            config: version.config,
            signature: signatureFromConfig(version.config),
            instances: version.instances,
            ...(version.operator !== undefined ? { operator: version.operator } : {}),
            stats,
          });
        }
        const retired = [...entry.versions.values()];
        const retiredUpload = entry.upload !== upload ? entry.upload : undefined;
        entry.versions = next;
        entry.unloadedVersions = new Set(
          [...retired.map((served) => served.version)].filter((version) => !next.has(version)),
        );
        entry.state = "READY";
        entry.loadFailed = false;
        entry.reason = "";
        this.parked.delete(name);
        entry.dir = dir;
        entry.fingerprint = fingerprint;
        entry.upload = upload;
        this.options.logger.info(
          { model: name, versions: [...next.keys()], fromControlApi: context.fromControlApi },
          "model loaded",
        );
        if (prepared[0]?.config.response_cache?.enable === true && this.options.responseCacheEnabled !== true) {
          this.options.logger.warn(
            { model: name },
            "model enables response_cache but the server has no response cache (start it with --cache-config local,size=<bytes>); serving uncached",
          );
        }
        await Promise.all(retired.map((served) => this.retire(served, next.has(served.version))));
        await retiredUpload?.discard();
      } catch (error) {
        await upload?.discard();
        let failure = asOperonError(error);
        if (upload !== undefined && failure.message.includes(upload.dir)) {
          // Clients see where their files went wrong, not the server's data-dir layout.
          failure = new OperonError(
            failure.kind,
            failure.message.replaceAll(upload.dir, `<uploaded files of '${name}'>`),
            { cause: failure },
          );
        }
        if (entry.versions.size === 0) {
          entry.state = "UNAVAILABLE";
          entry.reason = failure.message;
          entry.loadFailed = true;
        } else {
          entry.state = previousState ?? "READY";
        }
        if (upload === undefined) entry.fingerprint = await modelFingerprint(dir).catch(() => undefined);
        this.options.logger.warn({ model: name, err: failure.message }, "model failed to load");
        throw failure;
      }
    });
  }

  private async unload(name: string, context: { fromControlApi: boolean }): Promise<void> {
    const entry = this.models.get(name);
    if (entry === undefined) {
      if (await findModelDir(this.options.repositories, name)) return; // known, never loaded: nothing to do
      throw new OperonError("NOT_FOUND", `failed to unload '${name}': no such model`);
    }
    if (entry.registeredOperator !== undefined) {
      throw new OperonError(
        "INVALID_ARG",
        `'${name}' is an operator registered through /v2/operators; remove it with DELETE /v2/operators/${name}`,
      );
    }
    return this.serialize(entry, async () => {
      const retired = [...entry.versions.values()];
      entry.versions = new Map();
      for (const served of retired) entry.unloadedVersions.add(served.version);
      entry.state = "UNAVAILABLE";
      entry.reason = "unloaded";
      entry.loadFailed = false;
      entry.fingerprint = undefined;
      await Promise.all(retired.map((served) => this.retire(served, false)));
      await entry.upload?.discard();
      entry.upload = undefined;
      this.options.logger.info({ model: name, fromControlApi: context.fromControlApi }, "model unloaded");
    });
  }

  /** Drains and stops one version's instances; drops its metric series unless a new load serves that version again. */
  private async retire(served: ServedVersion, versionStillServed: boolean): Promise<void> {
    await served.instances.stop(this.options.unloadDrainMs ?? 30_000);
    if (!versionStillServed) this.options.metrics.removeModelVersion(served.model, served.version);
    if (served.operator !== undefined) {
      // Per-step series belong to the operator, not a version: keep those of steps some served version still has.
      const kept = new Set(
        [...(this.models.get(served.model)?.versions.values() ?? [])].flatMap(
          (other) => other.operator?.steps.map((step) => step.id) ?? [],
        ),
      );
      for (const step of served.operator.steps)
        if (!kept.has(step.id)) this.options.metrics.removeOperatorStep(served.model, step.id);
    }
  }
}

/** Instances one step of a group's count adds: its GPUs for KIND_GPU (every GPU of the host when it lists none), else 1. */
function gpusPerRound(group: { kind?: string; gpus?: number[] } | undefined, hostGpuCount: number): number {
  if (group?.kind !== "KIND_GPU") return 1;
  if (group.gpus !== undefined && group.gpus.length > 0) return group.gpus.length;
  return Math.max(1, hostGpuCount);
}

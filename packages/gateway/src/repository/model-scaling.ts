import { OperonError } from "@operon/protocol/errors";
import type { Logger } from "../observability/logger.js";
import { ModelInstances } from "../instances/model-instances.js";
import { hostGpus, type GpuInventory } from "../instances/gpu-inventory.js";
import { instancePlacements } from "../instances/instance-placement.js";
import type { ServedModels, ServedVersion } from "../operators/served-models.js";
import type { ModelLifecycle } from "./model-lifecycle.js";
import {
  DEFAULT_PARKED_MODEL_POLICY,
  ModelParkedError,
  PARKED_RELOAD_BACKOFF_MS,
  type ParkedModelPolicy,
} from "./parked-models.js";
import { instanceCountOf, instancesOfOtherModels, type ResourceLimits } from "./resource-limits.js";

/**
 * The resource scheduler's two levers on served models: rescale a model's
 * instances in place, and park an idle model (unload it so that the next
 * request loads it again, parked-models.ts). Allowed in every model control
 * mode: the model stays available to clients.
 */
export interface ModelScalingOptions {
  models: ServedModels;
  lifecycle: ModelLifecycle;
  logger: Logger;
  resourceLimits?: ResourceLimits;
  parkedModels?: ParkedModelPolicy;
  unloadDrainMs?: number;
  /** The host's GPUs (a KIND_GPU group without `gpus` uses all of them); default the probed inventory. */
  gpus?: GpuInventory;
  isStopped(): boolean;
}

export class ModelScaling {
  /** Models the resource scheduler unloaded (park): a request loads them again; the load under way, if any. */
  private readonly parked = new Map<string, { loading: Promise<void> | undefined; retryAt: number }>();

  constructor(private readonly options: ModelScalingOptions) {}

  /** Whether `name` is parked now. */
  isParked(name: string): boolean {
    return this.parked.has(name);
  }

  /** `name` is no longer parked: it loaded again, or an admin unloaded it (which stays unloaded). */
  unpark(name: string): void {
    this.parked.delete(name);
  }

  /**
   * Every served version of `name` runs `count` instances from now on,
   * grown or shrunk in place (ModelInstances.resize: no request is
   * dropped), and its config's instance_group count says so. Checked
   * against the admin's limits like a load. Models with more than one
   * instance group, and operators, are refused (which group would change
   * is not the scheduler's to guess).
   */
  async scaleInstances(
    name: string,
    count: number,
    kind?: ScalingKind,
  ): Promise<{ model: string; from: number; to: number; kind: ScalingKind }> {
    const { models } = this.options;
    if (!Number.isInteger(count) || count < 1 || count > 1024) {
      throw new OperonError(
        "INVALID_ARG",
        `instance count must be an integer from 1 to 1024, got ${JSON.stringify(count)}`,
      );
    }
    const entry = models.get(name);
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
    let kindNow: ScalingKind = "KIND_CPU";
    await models.serialize(entry, async () => {
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
      const others = instancesOfOtherModels(models.values(), name);
      if (limits !== undefined && others + count * versions.length > limits.maxInstancesPerHost) {
        throw new OperonError(
          "INVALID_ARG",
          `model '${name}': ${count} instances per version would make ${others + count * versions.length} on this server, over the limit of ${limits.maxInstancesPerHost} (--max-instances)`,
        );
      }
      from = instanceCountOf(versions[0]!.config);
      const gpus = this.options.gpus ?? hostGpus();
      const gpuCount = gpus.count;
      kindNow = kindOfGroup(versions[0]!.config.instance_group?.[0]);
      if (kind !== undefined && kind !== kindNow) {
        await this.move(name, versions, count, kind, gpus);
        kindNow = kind;
        return;
      }
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
          // The rescaled config places the new instances: a KIND_GPU group's new names land on its GPUs.
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
    return { model: name, from, to: count, kind: kindNow };
  }

  /**
   * Moves every served version of `name` to `count` instances of `kind` (the
   * resource scheduler's hardware fit): ModelInstances.replaceAll starts the
   * new kind's instances beside the old ones and only then drains the old
   * ones, so no request fails. The new instance group has a name of its own
   * (`<model>_gpu` / `<model>_cpu`) so that old and new instances never share
   * a name; a KIND_GPU group lists no `gpus` and so uses every GPU of the
   * host, one instance per GPU per round (count must be a multiple of them).
   * Refused before anything starts: KIND_GPU on a host without a GPU, a
   * KIND_MODEL group (the backend places it). A launch the backend refuses
   * (a backend that runs on the CPU only) leaves the model as it was.
   * Callers hold the model's serialization.
   */
  private async move(
    name: string,
    versions: ServedVersion[],
    count: number,
    kind: ScalingKind,
    gpus: GpuInventory,
  ): Promise<void> {
    const group = versions[0]!.config.instance_group?.[0];
    if (group?.kind === "KIND_MODEL") {
      throw new OperonError(
        "UNSUPPORTED",
        `model '${name}' has a KIND_MODEL instance group (its backend places the instances): it is not moved to ${kind}`,
      );
    }
    if (kind === "KIND_GPU" && gpus.count === 0) {
      throw new OperonError(
        "UNAVAILABLE",
        `model '${name}' cannot move to KIND_GPU: this host has no usable GPU (${gpus.reason ?? "none found"})`,
      );
    }
    const perRound = kind === "KIND_GPU" ? gpus.count : 1;
    if (count % perRound !== 0) {
      throw new OperonError(
        "INVALID_ARG",
        `model '${name}' on KIND_GPU runs one instance per round on each of the host's ${perRound} GPUs: its instance count must be a multiple of ${perRound}, got ${count}`,
      );
    }
    const suffix = kind === "KIND_GPU" ? "gpu" : "cpu";
    const oldName = group?.name || `${name}_0`;
    const groupName = oldName === `${name}_${suffix}` ? `${name}_${suffix}_moved` : `${name}_${suffix}`;
    for (const served of versions) {
      const pool = served.instances as ModelInstances;
      served.configuredInstances ??= instanceCountOf(served.config);
      const { gpus: _listed, ...rest } = group ?? {};
      const config = {
        ...served.config,
        instance_group: [{ ...rest, name: groupName, kind, count: count / perRound }],
      };
      const names = instancePlacements(name, config as Record<string, unknown>, gpus.count).map((p) => p.name);
      await pool.replaceAll(names, config as Record<string, unknown>, this.options.unloadDrainMs ?? 30_000);
      served.config = config;
    }
    this.options.logger.info({ model: name, to: count, kind }, "model moved to other hardware");
  }

  /**
   * Unloads `name` for the resource scheduler (memory is short and the
   * model is idle): like an unload, but the next request loads it again.
   */
  async park(name: string): Promise<void> {
    const entry = this.options.models.get(name);
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
    await this.options.lifecycle.unload(name, { fromControlApi: false });
    if (entry.state === "UNAVAILABLE")
      entry.reason = "unloaded by the resource scheduler; the next request loads it again";
  }

  /** Models parked now (GET /v2/operon/parked). */
  parkedModels(): string[] {
    return [...this.parked.keys()].sort();
  }

  /**
   * Each served model's instances now and as its config asked at load (the most over its versions), its requests
   * waiting in queue, the kind its instances run on, and its config's HARDWARE_KINDS_PARAMETER as written (the
   * resource scheduler parses it, and says what is wrong with it); operators left out.
   */
  scalingState(): ModelScalingState[] {
    const list: ModelScalingState[] = [];
    for (const entry of this.options.models.sorted()) {
      const pools = [...entry.versions.values()].filter((served) => served.instances instanceof ModelInstances);
      if (pools.length === 0) continue;
      list.push({
        model: entry.name,
        instances: Math.max(...pools.map((served) => (served.instances as ModelInstances).instanceCount)),
        configuredInstances: Math.max(
          ...pools.map((served) => served.configuredInstances ?? instanceCountOf(served.config)),
        ),
        queued: pools.reduce((sum, served) => sum + (served.instances as ModelInstances).queuedCount, 0),
        kind: kindOfGroup(pools[0]!.config.instance_group?.[0]) === "KIND_GPU" ? "GPU" : "CPU",
        hardwareKinds: pools[0]!.config.parameters?.[HARDWARE_KINDS_PARAMETER]?.string_value ?? null,
      });
    }
    return list;
  }

  /**
   * Each served operator's requests in flight now and the calls of each model its steps completed (both summed
   * over its versions): with its completed requests (the statistics) the resource scheduler derives the
   * operator's arrival rate, which completions alone cap at what its slowest step serves, and each step model's
   * direct requests (its completions less the operators' calls of it).
   */
  operatorLoad(): Array<{ operator: string; inFlight: number; modelCalls: Record<string, number> }> {
    const list: Array<{ operator: string; inFlight: number; modelCalls: Record<string, number> }> = [];
    for (const entry of this.options.models.sorted()) {
      const versions = [...entry.versions.values()].filter((served) => served.operator !== undefined);
      if (versions.length === 0) continue;
      const modelCalls: Record<string, number> = {};
      let inFlight = 0;
      for (const served of versions) {
        const runner = served.instances as { pendingCount?: number; modelCalls?: Record<string, number> };
        inFlight += runner.pendingCount ?? 0;
        for (const [model, calls] of Object.entries(runner.modelCalls ?? {}))
          modelCalls[model] = (modelCalls[model] ?? 0) + calls;
      }
      list.push({ operator: entry.name, inFlight, modelCalls });
    }
    return list;
  }

  /**
   * The failure branch of a lookup: for a parked model, starts its load
   * (once; again only PARKED_RELOAD_BACKOFF_MS after a failed one) and
   * returns the ModelParkedError to throw; undefined for any other model.
   */
  parkedFailure(name: string): ModelParkedError | undefined {
    const parked = this.parked.get(name);
    if (parked === undefined) return undefined;
    const policy = this.options.parkedModels ?? DEFAULT_PARKED_MODEL_POLICY;
    if (parked.loading === undefined && Date.now() >= parked.retryAt && !this.options.isStopped()) {
      this.options.logger.info({ model: name }, "request for a parked model: loading it again");
      parked.loading = this.options.lifecycle.load(name, {}, { fromControlApi: false }).then(
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
   * After a lookup threw: for a parked model under the "wait" policy, waits
   * (bounded) for its load and looks up again; otherwise rethrows. Callers
   * use it only in their catch branch (off the hot path).
   */
  async resolveAfterLoad(error: unknown, resolve: () => ServedVersion): Promise<ServedVersion> {
    const policy = this.options.parkedModels ?? DEFAULT_PARKED_MODEL_POLICY;
    if (!(error instanceof ModelParkedError) || policy.mode !== "wait") throw error;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<"expired">((done) => (timer = setTimeout(() => done("expired"), policy.waitMs)));
    try {
      if ((await Promise.race([error.ready.then(() => "loaded" as const), expired])) === "expired") throw error;
    } finally {
      clearTimeout(timer);
    }
    try {
      return resolve();
    } catch (again) {
      throw again instanceof ModelParkedError ? again : error;
    }
  }
}

/**
 * The model config parameter naming the hardware kinds the resource scheduler may run a model on, e.g.
 * `parameters { key: "operon_hardware_kinds" value: { string_value: "CPU,GPU" } }`; without it the model stays
 * on the kind its instance_group says.
 */
export const HARDWARE_KINDS_PARAMETER = "operon_hardware_kinds";

/** One served model as GET /v2/operon/scaling lists it. */
export interface ModelScalingState {
  model: string;
  instances: number;
  configuredInstances: number;
  queued: number;
  kind: "CPU" | "GPU";
  hardwareKinds: string | null;
}

/** The kinds a model can be moved between (Triton's instance_group kinds). */
export type ScalingKind = "KIND_CPU" | "KIND_GPU";

/** A group's kind as it runs: KIND_GPU, else the CPU (KIND_AUTO and an absent group run on the CPU in Operon). */
export function kindOfGroup(group: { kind?: string } | undefined): ScalingKind {
  return group?.kind === "KIND_GPU" ? "KIND_GPU" : "KIND_CPU";
}

/** Instances one step of a group's count adds: its GPUs for KIND_GPU (every GPU of the host when it lists none), else 1. */
export function gpusPerRound(group: { kind?: string; gpus?: number[] } | undefined, hostGpuCount: number): number {
  if (group?.kind !== "KIND_GPU") return 1;
  if (group.gpus !== undefined && group.gpus.length > 0) return group.gpus.length;
  return Math.max(1, hostGpuCount);
}

import type { ModelState } from "@operon/protocol/inference";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import type { OperatorSpec } from "@operon/operator-spec/operator-spec-schema";
import type { GatewayMetrics } from "../observability/metrics.js";
import type { ModelVersionStats } from "../observability/model-stats.js";
import type { VersionRunner } from "../scheduling/version-runner.js";
import type { ServedModelSignature } from "../signature/model-signature.js";

/**
 * The table of served models: one entry per model name, its served versions
 * and the chain that serializes its loads and unloads. The repository loads
 * models into it and operators serve in it as version 1 of a model of their
 * name, so it lives below both (repository → operators in the gateway's
 * folder layering).
 */

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

/** Files a load brought with it (repository/upload-staging.ts stages them). */
export interface EntryUpload {
  readonly dir: string;
  discard(): Promise<void>;
}

export interface ModelEntry {
  name: string;
  /** State of the last load/unload attempt when no version is serving. */
  state: ModelState | undefined;
  reason: string;
  /** Load warnings of what serves now: config fields Operon does not implement (model-loader.ts). */
  warnings?: string[];
  versions: Map<string, ServedVersion>;
  /** Versions unloaded, shown in the index as UNAVAILABLE "unloaded". */
  unloadedVersions: Set<string>;
  /** Folder served from, and its fingerprint (poll mode). */
  dir: string | undefined;
  fingerprint: string | undefined;
  upload: EntryUpload | undefined;
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

export interface ServedModelsOptions {
  metrics: GatewayMetrics;
  /** How long retiring a version waits for its in-flight requests before stopping its workers. */
  unloadDrainMs?: number;
}

export class ServedModels {
  private readonly models = new Map<string, ModelEntry>();

  constructor(private readonly options: ServedModelsOptions) {}

  get(name: string): ModelEntry | undefined {
    return this.models.get(name);
  }

  has(name: string): boolean {
    return this.models.has(name);
  }

  set(name: string, entry: ModelEntry): void {
    this.models.set(name, entry);
  }

  delete(name: string): void {
    this.models.delete(name);
  }

  names(): IterableIterator<string> {
    return this.models.keys();
  }

  entries(): IterableIterator<[string, ModelEntry]> {
    return this.models.entries();
  }

  values(): IterableIterator<ModelEntry> {
    return this.models.values();
  }

  /** Entries by name. */
  sorted(): ModelEntry[] {
    return [...this.models.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The entry of `name`, created (nothing served) when there is none. */
  entry(name: string): ModelEntry {
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
  serialize(entry: ModelEntry, fn: () => Promise<void>): Promise<void> {
    const run = entry.pending.catch(() => undefined).then(fn);
    entry.pending = run.catch(() => undefined);
    return run;
  }

  /** Drains and stops one version's instances; drops its metric series unless a new load serves that version again. */
  async retire(served: ServedVersion, versionStillServed: boolean): Promise<void> {
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

import { OperonError, asOperonError } from "@operon/protocol/errors";
import type { ModelLoadOptions } from "@operon/protocol/inference";
import type { Logger } from "../observability/logger.js";
import type { GatewayMetrics } from "../observability/metrics.js";
import { ModelVersionStats } from "../observability/model-stats.js";
import type { ModelInstancesOptions } from "../instances/model-instances.js";
import type { OperatorHooks } from "../operators/operator-validation.js";
import type { ServedModels, ServedVersion } from "../operators/served-models.js";
import { signatureFromConfig } from "../signature/model-signature.js";
import { prepareModel, type PreparedVersion } from "./model-loader.js";
import type { NativeBackendOptions } from "./native-backend-resolver.js";
import { assertNativeUploadAllowed, nativeUploadOf } from "./native-upload-policy.js";
import { findModelDir, isValidModelName, modelFingerprint } from "./repository-scanner.js";
import { instancesOfOtherModels, type ResourceLimits } from "./resource-limits.js";
import { stageUpload } from "./upload-staging.js";

/**
 * The life cycle of one model: load (from its repository folder or from
 * uploaded files), reload and unload, each queued behind the model's earlier
 * ones (ServedModels.serialize). A reload keeps the old versions serving
 * until the new ones are ready, and a failed reload leaves the old ones
 * serving (Triton's behaviour). A failed load never takes other models down:
 * it shows as UNAVAILABLE with its reason.
 */
export interface ModelLifecycleOptions {
  models: ServedModels;
  repositories: string[];
  strictModelConfig: boolean;
  uploadDir: string;
  maxUploadBytes: number;
  defaultMaxBatchSize: number;
  responseCacheEnabled?: boolean;
  /** What every version's instances start with (the manager routes their BLS calls). */
  instances: ModelInstancesOptions;
  /** The operator registry's hooks, for ensembles of the repository. */
  operators: () => OperatorHooks;
  logger: Logger;
  metrics: GatewayMetrics;
  resourceLimits?: ResourceLimits;
  nativeBackends?: NativeBackendOptions;
  allowNativeUploads?: boolean;
  isStopped(): boolean;
  /** Called when a load of `name` succeeded (a parked model is no longer parked). */
  onLoaded(name: string): void;
}

export class ModelLifecycle {
  constructor(private readonly options: ModelLifecycleOptions) {}

  async load(name: string, options: ModelLoadOptions, context: { fromControlApi: boolean }): Promise<void> {
    const { models } = this.options;
    if (this.options.isStopped()) throw new OperonError("UNAVAILABLE", "server is shutting down");
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
    if (models.get(name)?.registeredOperator !== undefined) {
      await upload?.discard();
      throw new OperonError(
        "ALREADY_EXISTS",
        `'${name}' is an operator registered through /v2/operators; remove it first (DELETE /v2/operators/${name})`,
      );
    }
    const entry = models.entry(name);
    return models.serialize(entry, async () => {
      const previousState = entry.state;
      if (entry.versions.size === 0) entry.state = "LOADING";
      let prepared: PreparedVersion[] | undefined;
      try {
        const fingerprint = upload === undefined ? await modelFingerprint(dir) : undefined;
        prepared = await prepareModel(name, dir, options.config, {
          strictModelConfig: this.options.strictModelConfig,
          defaultMaxBatchSize: this.options.defaultMaxBatchSize,
          instances: this.options.instances,
          operators: this.options.operators(),
          trustedFolder: upload === undefined,
          ...(this.options.nativeBackends !== undefined ? { native: this.options.nativeBackends } : {}),
          ...(this.options.resourceLimits !== undefined
            ? {
                limits: {
                  limits: this.options.resourceLimits,
                  instancesOfOtherModels: instancesOfOtherModels(models.values(), name),
                },
              }
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
        const warnings = prepared[0]?.warnings ?? [];
        if (warnings.length > 0) entry.warnings = warnings;
        else delete entry.warnings;
        for (const warning of warnings)
          this.options.logger.warn({ model: name, warning }, "model config sets a field Operon does not implement");
        this.options.onLoaded(name);
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
        await Promise.all(retired.map((served) => models.retire(served, next.has(served.version))));
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

  async unload(name: string, context: { fromControlApi: boolean }): Promise<void> {
    const { models } = this.options;
    const entry = models.get(name);
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
    return models.serialize(entry, async () => {
      const retired = [...entry.versions.values()];
      entry.versions = new Map();
      for (const served of retired) entry.unloadedVersions.add(served.version);
      entry.state = "UNAVAILABLE";
      entry.reason = "unloaded";
      entry.loadFailed = false;
      entry.fingerprint = undefined;
      await Promise.all(retired.map((served) => models.retire(served, false)));
      await entry.upload?.discard();
      entry.upload = undefined;
      this.options.logger.info({ model: name, fromControlApi: context.fromControlApi }, "model unloaded");
    });
  }
}

import { availableParallelism } from "node:os";
import { OperonError } from "@operon/protocol/errors";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { hostGpus } from "../instances/gpu-inventory.js";
import { instancePlacements } from "../instances/instance-placement.js";
import type { ModelEntry } from "../operators/served-models.js";

/**
 * What one model may take of the host, set by the admin (operon serve
 * --max-instances-per-model, --max-threads-per-instance, --max-instances).
 * Checked at every load (uploads through the console load through the
 * gateway too), before any worker starts, so a config asking for 12
 * instances of 64 threads each is refused with a message naming the limit
 * instead of exhausting the machine.
 */
export interface ResourceLimits {
  /** Instances of one model (summed over its instance groups). */
  maxInstancesPerModel: number;
  /** intra_op_thread_count and inter_op_thread_count of one instance (0 = onnxruntime's default, one per core, counts as the core count). */
  maxThreadsPerInstance: number;
  /** Instances of all models served at once on this host. */
  maxInstancesPerHost: number;
}

export function defaultResourceLimits(cores = availableParallelism()): ResourceLimits {
  return { maxInstancesPerModel: 2 * cores, maxThreadsPerInstance: cores, maxInstancesPerHost: 8 * cores };
}

/**
 * Instances a config asks for (an instance group without count has one; no
 * group: one instance; a KIND_GPU group has its count on each of its GPUs).
 */
export function instanceCountOf(config: ModelConfigJson, gpuCount = hostGpus().count): number {
  return instancePlacements(config.name ?? "model", config as Record<string, unknown>, gpuCount).length;
}

const THREAD_PARAMETERS = ["intra_op_thread_count", "inter_op_thread_count"] as const;

/** Throws INVALID_ARG naming the field and the limit when `config` asks for more than `limits` allow. */
export function checkResourceLimits(
  name: string,
  config: ModelConfigJson,
  limits: ResourceLimits,
  instancesOfOtherModels: number,
  cores = availableParallelism(),
): void {
  const instances = instanceCountOf(config);
  if (instances > limits.maxInstancesPerModel) {
    throw new OperonError(
      "INVALID_ARG",
      `model '${name}': instance_group asks for ${instances} instances; this server allows at most ${limits.maxInstancesPerModel} per model (--max-instances-per-model)`,
    );
  }
  if (instancesOfOtherModels + instances > limits.maxInstancesPerHost) {
    throw new OperonError(
      "INVALID_ARG",
      `model '${name}': its ${instances} instances would make ${instancesOfOtherModels + instances} on this server, over the limit of ${limits.maxInstancesPerHost} (--max-instances); unload a model or lower instance_group.count`,
    );
  }
  for (const key of THREAD_PARAMETERS) {
    const text = config.parameters?.[key]?.string_value;
    if (text === undefined || text === "") continue;
    const requested = Number(text);
    if (!Number.isInteger(requested) || requested < 0) {
      throw new OperonError(
        "INVALID_ARG",
        `model '${name}': parameter '${key}' must be a non-negative integer, got '${text}'`,
      );
    }
    const threads = requested === 0 ? cores : requested;
    if (threads > limits.maxThreadsPerInstance) {
      throw new OperonError(
        "INVALID_ARG",
        `model '${name}': parameter '${key}' asks for ${threads} threads per instance; this server allows at most ${limits.maxThreadsPerInstance} (--max-threads-per-instance)`,
      );
    }
  }
}

/** Backend instances of every served model but `name` (operators run none): what a load or rescale of `name` adds to. */
export function instancesOfOtherModels(models: Iterable<ModelEntry>, name: string): number {
  let count = 0;
  for (const entry of models) {
    if (entry.name === name) continue;
    for (const served of entry.versions.values())
      if (served.operator === undefined) count += instanceCountOf(served.config);
  }
  return count;
}

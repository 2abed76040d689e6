import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import type { SearchCandidate } from "./search-strategy.js";

/**
 * Between model configs and search candidates: the searched fields read
 * from a config, and a config made from a base config with the searched
 * fields changed (everything else, inputs, outputs, version policy,
 * optimization, kept as it is).
 *
 * Instance groups: the candidate's count goes into one group of the base's
 * first group's kind and GPUs (several groups collapse into one; KIND_CPU
 * when the base names none). A model with sequence batching keeps it and is never
 * given dynamic batching (Triton refuses both).
 */

/**
 * The shadow model a search measures candidates under, beside the live
 * model, whose traffic it leaves alone. Names of this shape are reserved:
 * the models list and the usage sampler skip them, and a search refuses to
 * start when its shadow name is taken.
 */
export function shadowModelName(model: string, searchId: string): string {
  return `${model}.search-${searchId.replace(/-/g, "").slice(0, 8)}`;
}

/** One definition of the reserved pattern for the gateway and the control plane. */
export { isShadowModelName } from "@operon/protocol/shadow-models";

export function candidateOf(config: ModelConfigJson): SearchCandidate {
  const groups = config.instance_group ?? [];
  const instanceCount =
    groups.length === 0
      ? 1
      : groups.reduce((sum, group) => sum + Math.max(1, group.count ?? 1) * Math.max(1, group.gpus?.length ?? 1), 0);
  const maxBatchSize = config.max_batch_size ?? 0;
  const batching = config.dynamic_batching;
  return {
    instanceCount,
    maxBatchSize,
    dynamicBatching:
      batching === undefined || maxBatchSize === 0
        ? null
        : {
            preferredBatchSizes: [...(batching.preferred_batch_size ?? [])],
            maxQueueDelayUs: Number(batching.max_queue_delay_microseconds ?? 0),
          },
  };
}

/** Whether the search may change the batch dimensions of this config. */
export function canSearchBatching(config: ModelConfigJson): boolean {
  return (config.max_batch_size ?? 0) > 0 && config.sequence_batching === undefined;
}

export function configOf(base: ModelConfigJson, candidate: SearchCandidate, name?: string): ModelConfigJson {
  const { dynamic_batching: baseBatching, instance_group: baseGroups, ...rest } = base;
  const first = baseGroups?.[0];
  // A group that names GPUs places `count` instances on each of them: the count is the candidate's total spread over them.
  const gpus = first?.gpus !== undefined && first.gpus.length > 0 ? first.gpus : undefined;
  const group = {
    ...(first?.name !== undefined ? { name: first.name } : {}),
    kind: first?.kind ?? "KIND_CPU",
    count: gpus === undefined ? candidate.instanceCount : Math.max(1, Math.ceil(candidate.instanceCount / gpus.length)),
    ...(gpus !== undefined ? { gpus } : {}),
  };
  const config: ModelConfigJson = { ...rest, max_batch_size: candidate.maxBatchSize, instance_group: [group] };
  if (name !== undefined) config.name = name;
  if (candidate.dynamicBatching !== null && candidate.maxBatchSize > 0) {
    const { preferred_batch_size: _preferred, max_queue_delay_microseconds: _delay, ...kept } = baseBatching ?? {};
    config.dynamic_batching = {
      ...kept,
      ...(candidate.dynamicBatching.preferredBatchSizes.length > 0
        ? { preferred_batch_size: candidate.dynamicBatching.preferredBatchSizes }
        : {}),
      max_queue_delay_microseconds: candidate.dynamicBatching.maxQueueDelayUs,
    };
  }
  return config;
}

import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { isNativeBackend } from "./model-loader.js";

/**
 * The one GPU on which a model's outputs may stay for the next step of an
 * operator, and on which it may read a GPU input, or undefined.
 *
 * Only a native backend (Triton's C++ API, in worker processes) hands GPU
 * memory across processes (CUDA IPC through the worker's addon), and only
 * when every instance runs on the same single GPU: a tensor must never reach
 * a worker on another GPU. A model that batches requests (dynamic or
 * sequence batching) or caches responses is left out: a tensor on a GPU has
 * no bytes in the gateway to join, split or key.
 */
export function deviceResidentGpu(config: ModelConfigJson): number | undefined {
  if (!isNativeBackend(config.backend)) return undefined;
  if (config.dynamic_batching !== undefined || config.sequence_batching !== undefined) return undefined;
  if (config.response_cache?.enable === true) return undefined;
  const groups = config.instance_group ?? [];
  if (groups.length === 0) return undefined;
  let gpu: number | undefined;
  for (const group of groups) {
    if (group.kind !== "KIND_GPU" || group.gpus?.length !== 1) return undefined;
    const only = group.gpus[0]!;
    if (gpu !== undefined && gpu !== only) return undefined;
    gpu = only;
  }
  return gpu;
}

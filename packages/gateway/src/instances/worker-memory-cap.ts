import { OperonError } from "@operon/protocol/errors";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";

/**
 * The memory cap of a model's worker processes (issue 25): a worker whose
 * resident memory (RSS, from procfs) is over it after an execution is
 * recycled between requests: it gets no new work, finishes what it holds,
 * a fresh worker takes its place, and it is stopped. No request fails
 * for it; requests wait in the queue (or go to the other instances) while
 * the fresh worker loads.
 *
 * The cap comes from the model config's parameter `worker_memory_limit_mb`
 * ("0" = none for this model), else the server's --worker-memory-limit-mb
 * (default 0 = none). It applies to worker processes only: instances on a
 * gateway thread share the gateway's memory, and a sequence model's worker
 * holds its sequences' state, which a recycle would lose, so the config
 * parameter is refused there and the server default does not apply.
 */
export const WORKER_MEMORY_LIMIT_PARAMETER = "worker_memory_limit_mb";

/** Least time between two memory reads of one worker, ms (a read is two procfs files). */
export const MEMORY_CHECK_INTERVAL_MS = 100;

/** The cap in bytes for a model's workers; undefined = none. Throws INVALID_ARG for a bad parameter. */
export function workerMemoryLimitBytes(
  model: string,
  config: ModelConfigJson,
  options: { serverDefaultMb: number; processIsolation: boolean; sequenceModel: boolean },
): number | undefined {
  const raw = config.parameters?.[WORKER_MEMORY_LIMIT_PARAMETER]?.string_value;
  let mb = options.serverDefaultMb;
  if (raw !== undefined) {
    const parsed = raw.trim() === "" ? Number.NaN : Number(raw);
    if (!Number.isInteger(parsed) || parsed < 0) {
      throw new OperonError(
        "INVALID_ARG",
        `model '${model}': parameter ${WORKER_MEMORY_LIMIT_PARAMETER} must be a whole number of MiB >= 0 (0 = no cap), got ${JSON.stringify(raw)}`,
      );
    }
    if (parsed > 0 && !options.processIsolation) {
      throw new OperonError(
        "INVALID_ARG",
        `model '${model}': parameter ${WORKER_MEMORY_LIMIT_PARAMETER} needs worker processes, but its instances run on gateway threads (set parameter operon_isolation to "process")`,
      );
    }
    if (parsed > 0 && options.sequenceModel) {
      throw new OperonError(
        "INVALID_ARG",
        `model '${model}': parameter ${WORKER_MEMORY_LIMIT_PARAMETER} cannot apply to a sequence model (recycling a worker would lose its sequences' state)`,
      );
    }
    mb = parsed;
  } else if (!options.processIsolation || options.sequenceModel) {
    return undefined;
  }
  return mb > 0 ? mb * 1024 * 1024 : undefined;
}

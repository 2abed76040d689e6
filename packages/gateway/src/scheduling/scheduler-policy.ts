import { OperonError } from "@operon/protocol/errors";
import type { Parameters } from "@operon/protocol/tensor";
import type { ModelConfigJson, ModelQueuePolicyJson } from "@operon/model-config/model-config-types";

/**
 * The scheduling rules of one model, read once from its config:
 * Triton's dynamic_batching fields and queue policies, in the units the
 * scheduler uses (ns). Without dynamic_batching a model gets Triton's
 * default scheduler: one request per execution, one FIFO queue.
 */
export interface QueuePolicy {
  timeoutAction: "REJECT" | "DELAY";
  /** 0 = requests never time out in the queue. */
  defaultTimeoutNs: number;
  allowTimeoutOverride: boolean;
  /** 0 = unbounded. */
  maxQueueSize: number;
}

export interface SchedulerPolicy {
  /** The model's max_batch_size (0 = it does not batch). */
  maxBatchSize: number;
  /** True when the config has dynamic_batching and the model batches. */
  batching: boolean;
  /**
   * How a batch reaches the backend. true: inputs are joined along the batch
   * dimension into one tensor set (ONNX Runtime). false: each request stays
   * a request, sent together so the backend's execute(requests) gets them as
   * a list and can fail one alone (the TypeScript backend, like Triton's
   * Python backend).
   */
  joinInputs: boolean;
  preferredBatchSizes: number[];
  maxQueueDelayNs: number;
  preserveOrdering: boolean;
  /** 0 = a single level. Level 1 is the highest priority. */
  priorityLevels: number;
  defaultPriorityLevel: number;
  /** Policy per level (index 0 used when priorityLevels is 0). */
  queuePolicies: QueuePolicy[];
}

/** Backends whose batch is one tensor set joined along the batch dimension ("" = no backend named: ONNX Runtime). */
const JOINING_BACKENDS: ReadonlySet<string> = new Set(["", "onnxruntime", "echo"]);

export function schedulerPolicyFromConfig(config: ModelConfigJson): SchedulerPolicy {
  const maxBatchSize = config.max_batch_size ?? 0;
  const dynamic = config.dynamic_batching;
  const batching = dynamic !== undefined && maxBatchSize > 0;
  const priorityLevels = dynamic?.priority_levels ?? 0;
  const base = toQueuePolicy(dynamic?.default_queue_policy);
  const queuePolicies: QueuePolicy[] = [base];
  for (let level = 1; level <= priorityLevels; level += 1) {
    const specific = dynamic?.priority_queue_policy?.[String(level)];
    queuePolicies.push(specific !== undefined ? toQueuePolicy(specific) : base);
  }
  return {
    maxBatchSize,
    batching,
    // Only ONNX Runtime (and echo) take one joined tensor set; request-level backends (TypeScript, native) see every request.
    joinInputs: JOINING_BACKENDS.has(config.backend ?? ""),
    preferredBatchSizes: [...(dynamic?.preferred_batch_size ?? [])].sort((a, b) => a - b),
    maxQueueDelayNs: (dynamic?.max_queue_delay_microseconds ?? 0) * 1000,
    preserveOrdering: dynamic?.preserve_ordering ?? false,
    priorityLevels,
    defaultPriorityLevel: priorityLevels > 0 ? dynamic?.default_priority_level || Math.ceil(priorityLevels / 2) : 0,
    queuePolicies,
  };
}

function toQueuePolicy(json: ModelQueuePolicyJson | undefined): QueuePolicy {
  return {
    timeoutAction: json?.timeout_action === "DELAY" ? "DELAY" : "REJECT",
    defaultTimeoutNs: (json?.default_timeout_microseconds ?? 0) * 1000,
    allowTimeoutOverride: json?.allow_timeout_override ?? false,
    maxQueueSize: json?.max_queue_size ?? 0,
  };
}

/**
 * The queue level of a request from its `priority` parameter (schedule_policy
 * extension): 0 or absent = the default level. Ignored when the model has no
 * priority levels, as Triton does.
 */
export function priorityLevelOf(policy: SchedulerPolicy, parameters: Parameters): number {
  if (policy.priorityLevels === 0) return 0;
  const raw = parameters.priority;
  if (raw === undefined) return policy.defaultPriorityLevel;
  const priority = typeof raw === "bigint" ? Number(raw) : raw;
  if (typeof priority !== "number" || !Number.isInteger(priority) || priority < 0) {
    throw new OperonError(
      "INVALID_ARG",
      `parameter 'priority' must be a non-negative integer, got ${JSON.stringify(String(raw))}`,
    );
  }
  if (priority === 0) return policy.defaultPriorityLevel;
  if (priority > policy.priorityLevels) {
    throw new OperonError(
      "INVALID_ARG",
      `parameter 'priority' is ${priority} but the model has priority levels 1..${policy.priorityLevels} (0 = default)`,
    );
  }
  return priority;
}

/**
 * How long a request may wait in the queue, in ns (0 = forever): the level's
 * default, or the request's `timeout` parameter (µs) when the policy allows
 * overrides — an override may only shorten it, as in Triton.
 */
export function queueTimeoutNsOf(policy: SchedulerPolicy, level: number, parameters: Parameters): number {
  const queuePolicy = policy.queuePolicies[level] ?? policy.queuePolicies[0]!;
  const raw = parameters.timeout;
  if (raw === undefined || !queuePolicy.allowTimeoutOverride) return queuePolicy.defaultTimeoutNs;
  const timeoutUs = typeof raw === "bigint" ? Number(raw) : raw;
  if (typeof timeoutUs !== "number" || !Number.isInteger(timeoutUs) || timeoutUs < 0) {
    throw new OperonError(
      "INVALID_ARG",
      `parameter 'timeout' must be a non-negative integer of microseconds, got ${JSON.stringify(String(raw))}`,
    );
  }
  const requested = timeoutUs * 1000;
  if (requested === 0) return queuePolicy.defaultTimeoutNs;
  return queuePolicy.defaultTimeoutNs === 0 ? requested : Math.min(requested, queuePolicy.defaultTimeoutNs);
}

import type { InferRequest } from "@operon/protocol/inference";
import { PERF_TRAFFIC_PARAMETER, PERF_TRAFFIC_VALUE } from "@operon/protocol/perf-traffic";
import type { InferenceEngine } from "../engine/engine-api.js";
import type { Principal } from "./access-policy.js";

/**
 * An API key's priority level (schedule_policy `priority`, 1 = highest)
 * for the inference requests that set none. The request's own `priority`
 * always wins. The level is capped at the model's lowest priority
 * (dynamic_batching.priority_levels): a key meant for "low priority
 * everywhere" must not fail on a model with fewer levels. Models without
 * priority levels get the key's level and ignore it, as they ignore a
 * client's.
 *
 * It also names the key's tenant on the request (traffic shares,
 * admission/tenant-shares.ts) and a batch job's key's requests as batch
 * traffic (online-latency.ts): every frontend passes each inference
 * request with its principal through here, so this is the one place.
 */
export function applyKeyPriority(engine: InferenceEngine, request: InferRequest, principal: Principal | null): void {
  if (principal !== null && principal.tenantId !== undefined) request.tenantId = principal.tenantId;
  applyPerfTrafficTag(request, principal);
  if (principal?.batchJob === true) request.trafficClass = "batch";
  if (principal === null || principal.priorityLevel <= 0 || request.parameters["priority"] !== undefined) return;
  request.parameters["priority"] = Math.min(principal.priorityLevel, priorityLevelsOf(engine, request));
}

/**
 * `operon_traffic: "perf"` (perf-traffic.ts) marks the request as perf
 * traffic when its caller may tag (no key needed here, an admin key, or the
 * control plane's); from anyone else the parameter is dropped, so neither
 * this request nor the operator steps it fans out to are counted apart.
 */
function applyPerfTrafficTag(request: InferRequest, principal: Principal | null): void {
  const tag = request.parameters[PERF_TRAFFIC_PARAMETER];
  if (tag === undefined) return;
  const mayTag = principal === null || principal.admin === true || principal.internal === true;
  if (tag === PERF_TRAFFIC_VALUE && mayTag) request.trafficClass = "perf";
  else delete request.parameters[PERF_TRAFFIC_PARAMETER];
}

/** The model's dynamic_batching.priority_levels; unbounded when it has none or is unknown (the engine reports that). */
function priorityLevelsOf(engine: InferenceEngine, request: InferRequest): number {
  try {
    const batching = engine.modelConfig(request.modelName, request.modelVersion)["dynamic_batching"] as
      | { priority_levels?: unknown }
      | undefined;
    const levels = batching?.priority_levels;
    return typeof levels === "number" && levels > 0 ? levels : Number.POSITIVE_INFINITY;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

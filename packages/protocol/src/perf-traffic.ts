import type { ModelStatistics, PerfTrafficCounts } from "./inference.js";

export type { PerfTrafficCounts } from "./inference.js";

/**
 * Perf traffic is not user traffic (issue 27): requests that `operon perf`,
 * the console's perf runs and config searches send carry the request
 * parameter `operon_traffic: "perf"` (in the body's `parameters`, over HTTP
 * and gRPC alike, as perf_analyzer's --request-parameter would send it). The
 * gateway counts them in Triton's statistics as usual (perf's own
 * server-side figures read those) and also apart, per model version, in
 * the statistics' Operon extension field `operon_perf_traffic`; the control
 * plane subtracts them from the Overview's requests, usage, cost and the
 * scheduler's demand.
 *
 * Only a caller that may see every tenant's usage may tag its traffic: an
 * admin key, the control plane's own key, or anyone on a gateway that needs
 * no key. From any other caller the gateway drops the parameter, so an
 * infer-only key cannot hide its requests from usage and cost.
 */
export const PERF_TRAFFIC_PARAMETER = "operon_traffic";
export const PERF_TRAFFIC_VALUE = "perf";

/** The counts of tagged requests in a statistics entry (0s when the gateway has none or predates the field). */
export function perfTrafficOf(entry: ModelStatistics): PerfTrafficCounts {
  const counts = entry.operon_perf_traffic;
  return {
    success_count: counts?.success_count ?? 0,
    success_ns: counts?.success_ns ?? 0,
    fail_count: counts?.fail_count ?? 0,
    fail_ns: counts?.fail_ns ?? 0,
    inference_count: counts?.inference_count ?? 0,
  };
}

/**
 * The statistics entry with perf traffic taken out of its request counts
 * and durations (success, fail) and inference_count: what users sent. Queue
 * and compute timings are left whole (they are not split by caller; their
 * means, Δns / Δcount, hold for all traffic).
 */
export function withoutPerfTraffic(entry: ModelStatistics): ModelStatistics {
  const perf = perfTrafficOf(entry);
  if (perf.success_count === 0 && perf.fail_count === 0 && perf.inference_count === 0) return entry;
  const stats = entry.inference_stats;
  return {
    ...entry,
    inference_count: Math.max(0, entry.inference_count - perf.inference_count),
    inference_stats: {
      ...stats,
      success: {
        count: Math.max(0, stats.success.count - perf.success_count),
        ns: Math.max(0, stats.success.ns - perf.success_ns),
      },
      fail: { count: Math.max(0, stats.fail.count - perf.fail_count), ns: Math.max(0, stats.fail.ns - perf.fail_ns) },
    },
  };
}

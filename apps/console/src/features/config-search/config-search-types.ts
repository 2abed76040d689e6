import type { RouterInputs, RouterOutputs } from "@/lib/api-types";

export type ConfigSearchSummary = RouterOutputs["configSearch"]["list"][number];
export type ConfigSearchDetail = RouterOutputs["configSearch"]["get"];
export type SearchCandidate = ConfigSearchDetail["candidates"][number];
export type ConfigSearchStartInput = RouterInputs["configSearch"]["start"];
export type ConfigSearchStatus = ConfigSearchSummary["status"];
export type ConfigSearchObjective = ConfigSearchSummary["objective"];

const STATUS_LABELS: Record<ConfigSearchStatus, string> = {
  RUNNING: "Running",
  SUCCEEDED: "Succeeded",
  FAILED: "Failed",
  CANCELLED: "Cancelled",
};

export function searchStatusLabel(status: ConfigSearchStatus): string {
  return STATUS_LABELS[status] ?? status;
}

export const OBJECTIVE_LABELS: Record<ConfigSearchObjective, string> = {
  MAX_THROUGHPUT: "Highest throughput under the p99 budget",
  MIN_COST: "Lowest cost per 1M inferences under the p99 budget",
};

export function configSearchHref(model: string): string {
  return `/models/${encodeURIComponent(model)}/config-search`;
}

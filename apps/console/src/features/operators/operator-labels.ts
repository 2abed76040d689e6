import type { RouterOutputs } from "@/lib/api-types";

export type OperatorSummary = RouterOutputs["operators"]["list"][number];
export type OperatorDetail = RouterOutputs["operators"]["get"];

export function sourceLabel(source: OperatorSummary["source"]): string {
  return source === "api" ? "Console / API" : "Repository ensemble";
}

export function stateLabel(state: OperatorSummary["state"], unreadyModels: readonly string[] = []): string {
  if (state === "DEGRADED")
    return `Degraded: ${unreadyModels.length > 0 ? unreadyModels.join(", ") : "a step model"} not ready`;
  return state === "SERVED" ? "Served" : state === "NOT_SERVED" ? "Not served" : "Unknown (gateway unreachable)";
}

export function operatorHref(name: string, suffix = ""): string {
  return `/operators/${encodeURIComponent(name)}${suffix}`;
}

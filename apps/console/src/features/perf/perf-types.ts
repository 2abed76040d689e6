import type { RouterInputs, RouterOutputs } from "@/lib/api-types";

export type PerfReportSummary = RouterOutputs["perf"]["list"][number];
export type PerfReportDetail = RouterOutputs["perf"]["get"];
export type PerfSample = PerfReportDetail["samples"][number];
export type PerfProgress = RouterOutputs["perf"]["progress"];
export type PerfStartInput = RouterInputs["perf"]["start"];
export type PerfStatus = PerfReportSummary["status"];

const STATUS_LABELS: Record<PerfStatus, string> = { RUNNING: "Running", SUCCEEDED: "Succeeded", FAILED: "Failed", CANCELLED: "Cancelled" };

export function statusLabel(status: PerfStatus): string {
  return STATUS_LABELS[status] ?? status;
}

export function targetLabel(report: { targetKind: string; targetName: string; targetVersion: string | null }): string {
  return `${report.targetKind === "OPERATOR" ? "operator" : "model"} ${report.targetName}${report.targetVersion ? ` v${report.targetVersion}` : ""}`;
}

export function reportHref(id: string): string {
  return `/perf/${encodeURIComponent(id)}`;
}

import type { RouterInputs, RouterOutputs } from "@/lib/api-types";

export type PerfReportSummary = RouterOutputs["perf"]["list"][number];
export type PerfReportDetail = RouterOutputs["perf"]["get"];
export type PerfSample = PerfReportDetail["samples"][number];
export type PerfProgress = RouterOutputs["perf"]["progress"];
export type PerfStartInput = RouterInputs["perf"]["start"];
export type PerfStatus = PerfReportSummary["status"];

export type PerfLatest = RouterOutputs["perf"]["latest"];
export type PerfVersionEntry = RouterOutputs["perf"]["versions"][number];
export type AutoPerfSettingsView = RouterOutputs["perf"]["settings"];

const STATUS_LABELS: Record<PerfStatus, string> = {
  QUEUED: "Queued",
  RUNNING: "Running",
  SUCCEEDED: "Succeeded",
  FAILED: "Failed",
  CANCELLED: "Cancelled",
};

/** Queued or running: the run has not ended. */
export function isPending(status: PerfStatus): boolean {
  return status === "QUEUED" || status === "RUNNING";
}

/** Who asked for the run: "automatic (model.upload version 3)" or the person's email. */
export function triggerLabel(report: {
  trigger: string;
  cause: string | null;
  createdBy: { email: string } | null;
}): string {
  if (report.trigger === "AUTOMATIC") return `automatic${report.cause ? ` (${report.cause})` : ""}`;
  if (report.trigger === "IMPORTED")
    return `${report.cause ?? "imported"}${report.createdBy ? ` by ${report.createdBy.email}` : ""}`;
  return report.createdBy?.email ?? "—";
}

export function statusLabel(status: PerfStatus): string {
  return STATUS_LABELS[status] ?? status;
}

export function targetLabel(report: { targetKind: string; targetName: string; targetVersion: string | null }): string {
  return `${report.targetKind === "OPERATOR" ? "operator" : "model"} ${report.targetName}${report.targetVersion ? ` v${report.targetVersion}` : ""}`;
}

export function reportHref(id: string): string {
  return `/perf/${encodeURIComponent(id)}`;
}

import { formatInteger, formatNumber } from "@/lib/number-format";
import { formatDateTime } from "@/lib/format";
import { statusLabel, targetLabel, type PerfReportDetail } from "./perf-types";

/** The run's status and how it was configured. */
export function PerfReportFacts({ report }: { report: PerfReportDetail }) {
  const config = report.config;
  const summary = report.summary;
  const facts: Array<[string, string]> = [
    ["Target", targetLabel(report)],
    ["Status", statusLabel(report.status)],
    ["Started", formatDateTime(report.createdAt)],
    ["Finished", formatDateTime(report.finishedAt, report.status === "RUNNING" ? "still running" : "—")],
    ["Concurrency", config ? `${config.concurrencyRange.start} to ${config.concurrencyRange.end}, step ${config.concurrencyRange.step}` : "—"],
    ["Batch size", config ? String(config.batchSize) : "—"],
    ["Measurement interval", config ? `${formatInteger(config.measurementIntervalMs)} ms` : "—"],
    ["Max windows per step", config ? String(config.maxTrials) : "—"],
    ["Protocol", config?.protocol.toUpperCase() ?? "—"],
    ["Hardware profile", report.hardwareProfile?.name ?? "none"],
    ["Requests", summary ? `${formatInteger(summary.totalRequests)} (${formatInteger(summary.totalErrors)} failed)` : "—"],
    ["Best", summary?.best ? `${formatNumber(summary.best.throughput)} infer/s at concurrency ${summary.best.concurrency}` : "—"],
    ["Started by", report.createdBy?.email ?? "—"],
  ];
  return (
    <dl className="facts">
      {facts.map(([term, value]) => (
        <div key={term} className="fact">
          <dt>{term}</dt>
          <dd>{term === "Status" ? <span className={`status status-${report.status.toLowerCase()}`}>{value}</span> : value}</dd>
        </div>
      ))}
    </dl>
  );
}

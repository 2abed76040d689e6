import { formatInteger, formatNumber } from "@/lib/number-format";
import { formatDateTime } from "@/lib/format";
import { stopReasonLabel } from "./perf-report-export";
import { isPending, statusLabel, targetLabel, triggerLabel, type PerfReportDetail } from "./perf-types";

/** The run's status and how it was configured. */
export function PerfReportFacts({ report }: { report: PerfReportDetail }) {
  const config = report.config;
  const summary = report.summary;
  const facts: Array<[string, string]> = [
    ["Target", targetLabel(report)],
    ["Status", statusLabel(report.status)],
    ["Queued", formatDateTime(report.createdAt)],
    ["Started", formatDateTime(report.startedAt, report.status === "QUEUED" ? "waiting in the queue" : "—")],
    ["Finished", formatDateTime(report.finishedAt, isPending(report.status) ? "not yet" : "—")],
    [
      "Concurrency",
      config?.sweep
        ? `${config.sweep.concurrencies.join(", ")} until the throughput gains less than ${formatNumber(config.sweep.minGainPercent)} % (at most ${formatInteger(config.sweep.timeBoundSecs)} s)`
        : config
          ? `${config.concurrencyRange.start} to ${config.concurrencyRange.end}, step ${config.concurrencyRange.step}`
          : "—",
    ],
    ["Batch size", config ? String(config.batchSize) : "—"],
    ["Measurement interval", config ? `${formatInteger(config.measurementIntervalMs)} ms` : "—"],
    ["Max windows per step", config ? String(config.maxTrials) : "—"],
    ["Protocol", config?.protocol.toUpperCase() ?? "—"],
    ["Hardware profile", report.hardwareProfile?.name ?? "none"],
    [
      "Requests",
      summary?.imported !== undefined
        ? `— (a CSV does not say; ${formatInteger(summary.imported.instanceCount)} instance${summary.imported.instanceCount === 1 ? "" : "s"} measured)`
        : summary
          ? `${formatInteger(summary.totalRequests)} (${formatInteger(summary.totalErrors)} failed)`
          : "—",
    ],
    [
      "Best",
      summary?.best
        ? `${formatNumber(summary.best.throughput)} infer/s at concurrency ${summary.best.concurrency}`
        : "—",
    ],
    ["Started by", triggerLabel(report)],
    ["Host load", hostLoadLabel(report.hostLoad)],
  ];
  const ended = stopReasonLabel(report.hostLoad?.stopReason, config?.sweep?.minGainPercent);
  if (ended !== null) facts.push(["Sweep ended", `because ${ended}`]);
  if (summary?.inputs && summary.inputs.length > 0) {
    const data = summary.inputData;
    const values =
      data === undefined
        ? ""
        : data.kind === "file"
          ? `; values from ${data.name ?? "a data file"}`
          : `; ${data.kind} values`;
    facts.push([
      "Inputs",
      `${summary.inputs.map((input) => `${input.name} ${input.datatype} [${input.shape.join(", ")}]`).join(", ")}${values}`,
    ]);
  }
  return (
    <dl className="facts">
      {facts.map(([term, value]) => (
        <div key={term} className="fact">
          <dt>{term}</dt>
          <dd>
            {term === "Status" ? (
              <span className={`status status-${report.status.toLowerCase()}`}>{value}</span>
            ) : (
              value
            )}
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** How much the host was shared during the run: the reader's measure of how far the numbers may be off. */
export function hostLoadLabel(load: PerfReportDetail["hostLoad"]): string {
  if (load === null) return "—";
  const other =
    load.otherRequestsPerSec === null
      ? "other traffic unknown"
      : `other traffic ${formatNumber(load.otherRequestsPerSec, 1)} requests/s`;
  const waited =
    load.waitedMs !== null && load.waitedMs >= 1000
      ? `; waited ${formatInteger(Math.round(load.waitedMs / 1000))} s for headroom`
      : "";
  const idle =
    load.idleCoresAtStart != null ? `; ${formatNumber(load.idleCoresAtStart, 1)} cores idle at the start` : "";
  return `${other}; load per core ${formatNumber(load.loadPerCoreBefore)} before, ${formatNumber(load.loadPerCoreAfter)} after${idle}${waited}`;
}

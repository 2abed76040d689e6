"use client";

import Link from "next/link";
import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { formatDateTime } from "@/lib/format";
import { formatNumber } from "@/lib/number-format";
import { DeletePerfReportButton } from "./delete-perf-report-button";
import { isPending, reportHref, statusLabel, targetLabel, triggerLabel, type PerfReportSummary } from "./perf-types";

function concurrencyText(report: PerfReportSummary): string {
  const range = report.config?.concurrencyRange;
  return range ? `${range.start}–${range.end}${range.step !== 1 ? ` step ${range.step}` : ""}` : "—";
}

function columnsFor(canManage: boolean): DataColumn<PerfReportSummary>[] {
  return [
    {
      id: "target",
      header: "Target",
      rowHeader: true,
      sortValue: (report) => targetLabel(report),
      cell: (report) => (
        <Link href={reportHref(report.id)}>
          <TruncatedText text={targetLabel(report)} />
        </Link>
      ),
    },
    {
      id: "status",
      header: "Status",
      sortValue: (report) => statusLabel(report.status),
      cell: (report) => (
        <>
          <span className={`status status-${report.status.toLowerCase()}`}>{statusLabel(report.status)}</span>
          {report.error && !isPending(report.status) ? <span className="field-hint"> {report.error}</span> : null}
        </>
      ),
    },
    {
      id: "started",
      header: "Started",
      nowrap: true,
      sortValue: (report) => new Date(report.createdAt).getTime(),
      cell: (report) => formatDateTime(report.createdAt),
    },
    { id: "concurrency", header: "Concurrency", nowrap: true, cell: concurrencyText },
    {
      id: "best",
      header: "Best throughput (infer/s)",
      numeric: true,
      sortValue: (report) => report.summary?.best?.throughput,
      cell: (report) =>
        report.summary?.best
          ? `${formatNumber(report.summary.best.throughput)} at c=${report.summary.best.concurrency}`
          : "—",
    },
    { id: "by", header: "By", sortValue: (report) => triggerLabel(report), cell: (report) => triggerLabel(report) },
    {
      id: "actions",
      header: "Actions",
      hideHeader: true,
      actions: true,
      cell: (report) => (canManage && !isPending(report.status) ? <DeletePerfReportButton report={report} /> : null),
    },
  ];
}

/** Every perf report, newest first as the API lists them; sortable by column. */
export function PerfReportsTable({
  reports,
  canManage,
}: {
  reports: readonly PerfReportSummary[];
  canManage: boolean;
}) {
  return (
    <DataTable
      label="Perf reports"
      columns={columnsFor(canManage)}
      rows={reports}
      rowKey={(report) => report.id}
      empty={{ title: "No perf reports yet" }}
    />
  );
}

"use client";

import { formatNumber } from "@/lib/number-format";
import Link from "next/link";
import { formatDateTime } from "@/lib/format";
import { DeletePerfReportButton } from "./delete-perf-report-button";
import { isPending, reportHref, statusLabel, targetLabel, triggerLabel, type PerfReportSummary } from "./perf-types";
import { TableScroller } from "@/components/table-scroller";

export function PerfReportsTable({
  reports,
  canManage,
}: {
  reports: readonly PerfReportSummary[];
  canManage: boolean;
}) {
  return (
    <TableScroller label="Perf reports">
      <table>
        <caption className="visually-hidden">Perf reports</caption>
        <thead>
          <tr>
            <th scope="col">Target</th>
            <th scope="col">Status</th>
            <th scope="col">Started</th>
            <th scope="col">Concurrency</th>
            <th scope="col" className="cell-number">
              Best throughput (infer/s)
            </th>
            <th scope="col">By</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {reports.map((report) => {
            const range = report.config?.concurrencyRange;
            return (
              <tr key={report.id}>
                <th scope="row">
                  <Link href={reportHref(report.id)}>{targetLabel(report)}</Link>
                </th>
                <td>
                  <span className={`status status-${report.status.toLowerCase()}`}>{statusLabel(report.status)}</span>
                  {report.error && !isPending(report.status) ? (
                    <span className="field-hint"> {report.error}</span>
                  ) : null}
                </td>
                <td className="cell-nowrap">{formatDateTime(report.createdAt)}</td>
                <td className="cell-nowrap">
                  {range ? `${range.start}–${range.end}${range.step !== 1 ? ` step ${range.step}` : ""}` : "—"}
                </td>
                <td className="cell-number">
                  {report.summary?.best
                    ? `${formatNumber(report.summary.best.throughput)} at c=${report.summary.best.concurrency}`
                    : "—"}
                </td>
                <td>{triggerLabel(report)}</td>
                <td className="cell-actions">
                  {canManage && !isPending(report.status) ? <DeletePerfReportButton report={report} /> : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </TableScroller>
  );
}

"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { QueryView } from "@/components/states/query-view";
import { formatLatencyUs, formatNumber } from "@/lib/number-format";
import { formatDateTime } from "@/lib/format";
import { useTRPC } from "@/lib/trpc";
import { PerfRunProgress } from "./perf-run-progress";
import { hostLoadLabel } from "./perf-report-facts";
import { isPending, reportHref, statusLabel, triggerLabel, type PerfLatest } from "./perf-types";

const PENDING_POLL_MS = 3000;
/** Otherwise: a change (a config edit on this page, an upload elsewhere) queues a run a moment later, so look again now and then. */
const IDLE_POLL_MS = 10_000;

/**
 * "The latest report" of a model or operator page: queued (with its place),
 * running (with progress), succeeded (headline numbers) or failed (the
 * reason), with a link to the report. Polls, so the run an upload or a
 * config change queued appears without a reload.
 */
export function LatestPerfReport({
  kind,
  name,
  canCancel,
}: {
  kind: "MODEL" | "OPERATOR";
  name: string;
  canCancel: boolean;
}) {
  const trpc = useTRPC();
  const latest = useQuery({
    ...trpc.perf.latest.queryOptions({ kind, name }),
    refetchInterval: (query) => {
      const report = query.state.data?.report;
      return report != null && isPending(report.status) ? PENDING_POLL_MS : IDLE_POLL_MS;
    },
  });
  return (
    <section className="card" aria-labelledby="latest-perf-title">
      <h2 id="latest-perf-title">Latest perf report</h2>
      <QueryView query={latest} loadingLabel="Loading the latest perf report…">
        {(data) => <LatestReportBody data={data} canCancel={canCancel} />}
      </QueryView>
    </section>
  );
}

function LatestReportBody({ data, canCancel }: { data: PerfLatest; canCancel: boolean }) {
  const report = data.report;
  if (report === null) {
    return (
      <p className="muted">
        No perf report yet. One is queued automatically after each upload, new version or config change, unless an admin
        turned automatic runs off.
      </p>
    );
  }
  const best = report.summary?.best ?? null;
  return (
    <div className="latest-perf">
      <p>
        <span className={`status status-${report.status.toLowerCase()}`}>{statusLabel(report.status)}</span>{" "}
        <span className="muted small">
          {report.targetVersion ? `version ${report.targetVersion}, ` : ""}
          {triggerLabel(report)}, {formatDateTime(report.createdAt)}
        </span>
      </p>
      {isPending(report.status) ? (
        <PerfRunProgress id={report.id} canCancel={canCancel} showReportLink={false} />
      ) : null}
      {report.status === "SUCCEEDED" && best ? (
        <p>
          Best: <strong>{formatNumber(best.throughput)} infer/s</strong> at concurrency {best.concurrency}, p99{" "}
          {formatLatencyUs(best.latencyP99Us)}
        </p>
      ) : null}
      {report.status !== "SUCCEEDED" && !isPending(report.status) && report.error ? (
        <p className={report.status === "FAILED" ? "form-alert" : "notice"}>{report.error}</p>
      ) : null}
      {report.hostLoad ? <p className="muted small">Host during the run: {hostLoadLabel(report.hostLoad)}</p> : null}
      <p>
        <Link href={reportHref(report.id)}>Open the latest report</Link>
      </p>
    </div>
  );
}

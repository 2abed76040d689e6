"use client";

import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import type { RouterOutputs } from "@/lib/api-types";
import { JobActions } from "./job-actions";
import { controlText, gatewaysText, timeLeft } from "./job-format";

type Job = RouterOutputs["jobs"]["list"][number];
type Failure = RouterOutputs["jobs"]["failures"][number];

/** "model add_sub", "operator tokenize": what a job runs, as its row and its progress bar are named. */
export function jobTargetLabel(job: Job): string {
  return `${job.target.kind === "OPERATOR" ? "operator" : "model"} ${job.target.name}`;
}

/** The Jobs list (issue 24, through the console's DataTable since issue 26): one row a job, newest first as listed. */
export function JobsTable({ jobs, onFailures }: { jobs: readonly Job[]; onFailures: (id: string) => void }) {
  const columns: DataColumn<Job>[] = [
    {
      id: "target",
      header: "Target",
      rowHeader: true,
      sortValue: jobTargetLabel,
      cell: (job) => (
        <>
          <TruncatedText text={jobTargetLabel(job)} />
          <span className="cell-note">{job.id.slice(0, 8)}</span>
        </>
      ),
    },
    {
      id: "dataset",
      header: "Dataset",
      sortValue: (job) => job.datasetName,
      cell: (job) => <TruncatedText text={job.datasetName} size="short" />,
    },
    {
      id: "owner",
      header: "Owner",
      sortValue: (job) => job.ownerEmail,
      cell: (job) => (job.ownerEmail ? <TruncatedText text={job.ownerEmail} size="short" /> : "–"),
    },
    {
      id: "state",
      header: "State",
      sortValue: (job) => job.state,
      cell: (job) => (
        <>
          <span className="badge">{job.state.toLowerCase()}</span>
          {job.error ? <div className="field-error small">{job.error}</div> : null}
        </>
      ),
    },
    {
      id: "progress",
      header: "Progress",
      sortValue: (job) => (job.totalRows ? job.doneRows / job.totalRows : null),
      cell: (job) => <JobProgress job={job} />,
    },
    {
      id: "failed",
      header: "Failed rows",
      numeric: true,
      sortValue: (job) => job.failedRows,
      cell: (job) =>
        job.failedRows > 0 ? (
          <button type="button" className="button" onClick={() => onFailures(job.id)}>
            {job.failedRows} failed
          </button>
        ) : (
          "0"
        ),
    },
    { id: "actions", header: "Actions", hideHeader: true, actions: true, cell: (job) => <JobActions job={job} /> },
  ];
  return (
    <DataTable
      label="Jobs"
      columns={columns}
      rows={jobs}
      rowKey={(job) => job.id}
      rowLabel={(job) => `job ${jobTargetLabel(job)} on ${job.datasetName}`}
    />
  );
}

/** The bar, rows done of all, and the pace: rows/s, time left at that rate, requests in flight while running. */
function JobProgress({ job }: { job: Job }) {
  const total = job.totalRows ?? 0;
  const percent = total > 0 ? Math.floor((100 * job.doneRows) / total) : 0;
  return (
    <>
      <progress max={total || 1} value={job.doneRows} aria-label={`progress of ${jobTargetLabel(job)}`} />
      <div className="small">
        {job.doneRows.toLocaleString("en")} / {job.totalRows === null ? "?" : total.toLocaleString("en")} rows (
        {percent} %)
      </div>
      <div className="small muted">
        {job.rowsPerSec !== null ? `${job.rowsPerSec.toFixed(0)} rows/s` : "– rows/s"} · {timeLeft(job.secondsLeft)}{" "}
        left
        {job.state === "RUNNING" ? ` · ${job.concurrency} in flight` : ""}
      </div>
      {job.state === "RUNNING" && job.control ? <div className="small muted">{controlText(job.control)}</div> : null}
      {gatewaysText(job.gateways) ? <div className="small muted">Gateways: {gatewaysText(job.gateways)}</div> : null}
    </>
  );
}

/** One job's failed rows: which row, its key columns, why it failed and how often it was tried. */
export function FailedRowsTable({ failures }: { failures: readonly Failure[] }) {
  const columns: DataColumn<Failure>[] = [
    { id: "row", header: "Row", rowHeader: true, numeric: true, sortValue: (f) => f.row, cell: (f) => f.row },
    { id: "key", header: "Key", sortValue: keyText, cell: keyText },
    { id: "error", header: "Error", sortValue: (f) => f.error, cell: (f) => f.error },
    { id: "attempts", header: "Attempts", numeric: true, sortValue: (f) => f.attempts, cell: (f) => f.attempts },
  ];
  return (
    <DataTable
      label="Failed rows of the job"
      columns={columns}
      rows={failures}
      rowKey={(f) => String(f.row)}
      empty={{ title: "No failed rows" }}
    />
  );
}

function keyText(failure: Failure): string {
  return (
    Object.entries(failure.key)
      .map(([key, value]) => `${key}=${String(value)}`)
      .join(", ") || "–"
  );
}

import Link from "next/link";
import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import type { RouterOutputs } from "@/lib/api-types";
import { formatBytes, formatSeconds } from "@/lib/number-format";
import { formatCores } from "./cpu-rates";
import { WorkerStateBadge } from "./worker-state-badge";

export type WorkerRow = RouterOutputs["workers"]["list"]["workers"][number];

export function workerKey(worker: WorkerRow): string {
  return `${worker.model}/${worker.version}/${worker.instance}`;
}

function placement(worker: WorkerRow): string {
  return worker.kind === "GPU" ? `GPU ${worker.device ?? "?"}` : "CPU";
}

/**
 * One row per model instance, named by its instance, with the model and version it serves under the name (the
 * instance name already holds the model's, so separate columns would only make the table too wide for a laptop),
 * and where it runs (CPU, GPU n) under its backend for the same reason.
 */
export function WorkersTable({
  workers,
  cpuRates,
}: {
  workers: readonly WorkerRow[];
  cpuRates: ReadonlyMap<string, number>;
}) {
  const columns: DataColumn<WorkerRow>[] = [
    {
      id: "instance",
      header: "Instance (model, version)",
      rowHeader: true,
      sortValue: (worker) => worker.instance,
      cell: (worker) => (
        <>
          <TruncatedText as="code" text={worker.instance} />
          <span className="cell-note">
            <Link href={`/models/${encodeURIComponent(worker.model)}`}>
              <TruncatedText text={worker.model} size="short" />
            </Link>
            , version {worker.version}
          </span>
        </>
      ),
    },
    {
      // The placement under the backend, not a column of its own: nine columns were 50 px wider than the card at
      // 1,280 px, so the RSS column scrolled out of sight (e2e/browser/workers-table-fit).
      id: "backend",
      header: "Backend (device)",
      sortValue: (worker) => worker.backend,
      cell: (worker) => (
        <>
          <TruncatedText text={worker.backend} size="short" />
          <span className="cell-note">{placement(worker)}</span>
        </>
      ),
    },
    {
      id: "isolation",
      header: "Runs in (PID)",
      sortValue: (worker) => worker.isolation,
      // "event loop", not "gateway event loop": the column must fit a laptop's table (workers-table-fit.test.ts)
      // now that tiny models run there by default; the page's count line says whose loop it is.
      cell: (worker) =>
        worker.isolation === "thread"
          ? `gateway thread (${worker.pid ?? "—"})`
          : worker.isolation === "inline"
            ? `event loop (${worker.pid ?? "—"})`
            : `process ${worker.pid ?? "—"}`,
      nowrap: true,
    },
    {
      id: "state",
      header: "State",
      sortValue: (worker) => worker.state,
      cell: (worker) => <WorkerStateBadge state={worker.state} />,
    },
    {
      id: "restarts",
      header: "Restarts",
      numeric: true,
      sortValue: (worker) => worker.restarts,
      cell: (worker) => worker.restarts,
    },
    {
      id: "cpuSeconds",
      header: "CPU seconds",
      numeric: true,
      sortValue: (worker) => worker.cpuSeconds,
      cell: (worker) => formatSeconds(worker.cpuSeconds),
    },
    {
      id: "cpuNow",
      header: "CPU now",
      numeric: true,
      sortValue: (worker) => cpuRates.get(workerKey(worker)),
      cell: (worker) => formatCores(cpuRates.get(workerKey(worker))),
    },
    {
      id: "rss",
      header: "RSS",
      numeric: true,
      sortValue: (worker) => worker.rssBytes,
      cell: (worker) => formatBytes(worker.rssBytes),
    },
  ];
  return (
    <DataTable
      label="Model instances"
      columns={columns}
      rows={workers}
      rowKey={workerKey}
      initialSort={{ column: "instance" }}
    />
  );
}

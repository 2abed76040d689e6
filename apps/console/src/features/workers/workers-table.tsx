import { formatBytes, formatSeconds } from "@/lib/number-format";
import Link from "next/link";
import type { RouterOutputs } from "@/lib/api-types";
import { formatCores } from "./cpu-rates";
import { WorkerStateBadge } from "./worker-state-badge";
import { TableScroller } from "@/components/table-scroller";

export type WorkerRow = RouterOutputs["workers"]["list"]["workers"][number];

export function workerKey(worker: WorkerRow): string {
  return `${worker.model}/${worker.version}/${worker.instance}`;
}

function placement(worker: WorkerRow): string {
  return worker.kind === "GPU" ? `GPU ${worker.device ?? "?"}` : "CPU";
}

/**
 * One row per worker process (one per model instance), named by its
 * instance, with the model and version it serves under the name (the
 * instance name already holds the model's, so separate columns would only
 * make the table too wide for a laptop).
 */
export function WorkersTable({
  workers,
  cpuRates,
}: {
  workers: readonly WorkerRow[];
  cpuRates: ReadonlyMap<string, number>;
}) {
  return (
    <TableScroller label="Worker processes">
      <table className="stack-table">
        <caption className="visually-hidden">Worker processes</caption>
        <thead>
          <tr>
            <th scope="col">Instance (model, version)</th>
            <th scope="col">Backend</th>
            <th scope="col">Kind / device</th>
            <th scope="col">Runs in (PID)</th>
            <th scope="col">State</th>
            <th scope="col">Restarts</th>
            <th scope="col">CPU seconds</th>
            <th scope="col">CPU now</th>
            <th scope="col">RSS</th>
          </tr>
        </thead>
        <tbody>
          {workers.map((worker) => (
            <tr key={workerKey(worker)}>
              <th scope="row">
                <code>{worker.instance}</code>
                <span className="cell-note">
                  <Link href={`/models/${encodeURIComponent(worker.model)}`}>{worker.model}</Link>, version{" "}
                  {worker.version}
                </span>
              </th>
              <td data-label="Backend">{worker.backend}</td>
              <td data-label="Kind / device">{placement(worker)}</td>
              <td data-label="Runs in (PID)" className="cell-number">
                {worker.isolation === "thread"
                  ? `gateway thread (${worker.pid ?? "—"})`
                  : `process ${worker.pid ?? "—"}`}
              </td>
              <td data-label="State">
                <WorkerStateBadge state={worker.state} />
              </td>
              <td data-label="Restarts" className="cell-number">
                {worker.restarts}
              </td>
              <td data-label="CPU seconds" className="cell-number">
                {formatSeconds(worker.cpuSeconds)}
              </td>
              <td data-label="CPU now" className="cell-number">
                {formatCores(cpuRates.get(workerKey(worker)))}
              </td>
              <td data-label="RSS" className="cell-number">
                {formatBytes(worker.rssBytes)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

import { TableScroller } from "@/components/table-scroller";
import { formatDateTime } from "@/lib/format";
import { formatNumber } from "@/lib/number-format";
import { ACTION_LABELS, type SchedulerDecisionRow } from "./scheduler-types";

function counts(decision: SchedulerDecisionRow): string {
  if (decision.action === "UNLOAD") return `${decision.fromCount} → unloaded`;
  if (decision.action === "LOAD") return `unloaded → ${decision.toCount}`;
  return `${decision.fromCount} → ${decision.toCount}`;
}

/** The scheduler's decisions, newest first, each with its inputs and reason. */
export function DecisionsTable({ decisions }: { decisions: readonly SchedulerDecisionRow[] }) {
  return (
    <TableScroller label="Scheduler decisions">
      <table className="stack-table">
        <caption className="visually-hidden">Scheduler decisions</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Model</th>
            <th scope="col">Decision</th>
            <th scope="col">Instances</th>
            <th scope="col">Demand / capacity (req/s)</th>
            <th scope="col">Reason</th>
          </tr>
        </thead>
        <tbody>
          {decisions.map((decision) => (
            <tr key={decision.id}>
              <td data-label="Time">{formatDateTime(decision.at)}</td>
              <th scope="row">
                <code>{decision.model}</code>
              </th>
              <td data-label="Decision">
                {ACTION_LABELS[decision.action]}
                {!decision.applied && decision.action !== "HOLD" ? (
                  <span className="cell-note">refused by the gateway</span>
                ) : null}
              </td>
              <td data-label="Instances" className="cell-number">
                {counts(decision)}
              </td>
              <td data-label="Demand / capacity (req/s)" className="cell-number">
                {formatNumber(decision.demandRps, 1)} / {formatNumber(decision.capacityRps, 1)}
                {decision.capacitySource ? (
                  <span className="cell-note">{decision.capacitySource === "report" ? "perf report" : "default"}</span>
                ) : null}
              </td>
              <td data-label="Reason">{decision.reason}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

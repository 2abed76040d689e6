import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { formatDateTime } from "@/lib/format";
import { formatNumber } from "@/lib/number-format";
import { ACTION_LABELS, type SchedulerDecisionRow } from "./scheduler-types";

function counts(decision: SchedulerDecisionRow): string {
  if (decision.action === "UNLOAD") return `${decision.fromCount} → unloaded`;
  if (decision.action === "LOAD") return `unloaded → ${decision.toCount}`;
  if (decision.action === "MOVE" && decision.kind)
    return `${decision.fromCount} → ${decision.toCount} on ${decision.kind}`;
  return `${decision.fromCount} → ${decision.toCount}`;
}

const COLUMNS: DataColumn<SchedulerDecisionRow>[] = [
  {
    id: "time",
    header: "Time",
    nowrap: true,
    sortValue: (decision) => new Date(decision.at).getTime(),
    cell: (decision) => formatDateTime(decision.at),
  },
  {
    id: "model",
    header: "Model",
    rowHeader: true,
    sortValue: (decision) => decision.model,
    cell: (decision) => (
      <>
        <TruncatedText as="code" text={decision.model} size="short" />
        {decision.operator ? <span className="cell-note">for operator {decision.operator}</span> : null}
      </>
    ),
  },
  {
    id: "decision",
    header: "Decision",
    sortValue: (decision) => decision.action,
    cell: (decision) => (
      <>
        {ACTION_LABELS[decision.action]}
        {!decision.applied && decision.action !== "HOLD" ? (
          <span className="cell-note">refused by the gateway</span>
        ) : null}
      </>
    ),
  },
  { id: "instances", header: "Instances", numeric: true, cell: counts },
  {
    id: "demand",
    header: "Demand / capacity (req/s)",
    numeric: true,
    sortValue: (decision) => decision.demandRps,
    cell: (decision) => (
      <>
        {formatNumber(decision.demandRps, 1)} / {formatNumber(decision.capacityRps, 1)}
        {decision.capacitySource ? (
          <span className="cell-note">{decision.capacitySource === "report" ? "perf report" : "default"}</span>
        ) : null}
      </>
    ),
  },
  { id: "reason", header: "Reason", cell: (decision) => decision.reason },
];

/** The scheduler's decisions, newest first, each with its inputs and reason. */
export function DecisionsTable({ decisions }: { decisions: readonly SchedulerDecisionRow[] }) {
  return (
    <DataTable
      label="Scheduler decisions"
      columns={COLUMNS}
      rows={decisions}
      rowKey={(decision) => decision.id}
      empty={{ title: "No decisions yet" }}
    />
  );
}

"use client";

import Link from "next/link";
import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { formatDateTime } from "@/lib/format";
import { DeleteOperatorButton } from "./delete-operator-button";
import { operatorHref, sourceLabel, stateLabel, type OperatorSummary } from "./operator-labels";

const COLUMNS: DataColumn<OperatorSummary>[] = [
  {
    id: "name",
    header: "Name",
    rowHeader: true,
    sortValue: (operator) => operator.name,
    cell: (operator) => (
      <>
        <Link href={operatorHref(operator.name)}>
          <TruncatedText text={operator.name} />
        </Link>
        {operator.description ? <span className="cell-sub">{operator.description}</span> : null}
      </>
    ),
  },
  {
    id: "source",
    header: "Source",
    sortValue: (operator) => operator.source,
    cell: (operator) => sourceLabel(operator.source),
  },
  {
    id: "state",
    header: "State",
    sortValue: (operator) => operator.state,
    cell: (operator) => (
      <span className={`status status-${operator.state.toLowerCase()}`}>
        {stateLabel(operator.state, operator.unreadyModels)}
      </span>
    ),
  },
  {
    id: "steps",
    header: "Steps",
    numeric: true,
    sortValue: (operator) => operator.stepCount,
    cell: (operator) => operator.stepCount,
  },
  {
    id: "version",
    header: "Latest version",
    numeric: true,
    sortValue: (operator) => operator.latestVersion,
    cell: (operator) => operator.latestVersion ?? "—",
  },
  {
    id: "models",
    header: "Models used",
    cell: (operator) =>
      operator.models.length > 0 ? <TruncatedText text={operator.models.join(", ")} size="short" /> : "—",
  },
  {
    id: "updated",
    header: "Updated",
    nowrap: true,
    sortValue: (operator) => (operator.updatedAt ? new Date(operator.updatedAt).getTime() : null),
    cell: (operator) => formatDateTime(operator.updatedAt),
  },
];

export function OperatorsTable({
  operators,
  canManage,
}: {
  operators: readonly OperatorSummary[];
  canManage: boolean;
}) {
  const columns: DataColumn<OperatorSummary>[] = [
    ...COLUMNS,
    {
      id: "actions",
      header: "Actions",
      hideHeader: true,
      actions: true,
      cell: (operator) => (canManage && operator.stored ? <DeleteOperatorButton name={operator.name} /> : null),
    },
  ];
  return (
    <DataTable
      label="Operators"
      columns={columns}
      rows={operators}
      rowKey={(operator) => operator.name}
      initialSort={{ column: "name" }}
    />
  );
}

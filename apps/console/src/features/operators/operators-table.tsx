"use client";

import Link from "next/link";
import { formatDateTime } from "@/lib/format";
import { DeleteOperatorButton } from "./delete-operator-button";
import { operatorHref, sourceLabel, stateLabel, type OperatorSummary } from "./operator-labels";
import { TableScroller } from "@/components/table-scroller";

export function OperatorsTable({
  operators,
  canManage,
}: {
  operators: readonly OperatorSummary[];
  canManage: boolean;
}) {
  return (
    <TableScroller label="Operators">
      <table>
        <caption className="visually-hidden">Operators</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Source</th>
            <th scope="col">State</th>
            <th scope="col" className="cell-number">
              Steps
            </th>
            <th scope="col" className="cell-number">
              Latest version
            </th>
            <th scope="col">Models used</th>
            <th scope="col">Updated</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {operators.map((operator) => (
            <tr key={operator.name}>
              <th scope="row">
                <Link href={operatorHref(operator.name)}>{operator.name}</Link>
                {operator.description ? <span className="cell-sub">{operator.description}</span> : null}
              </th>
              <td>{sourceLabel(operator.source)}</td>
              <td>
                <span className={`status status-${operator.state.toLowerCase()}`}>
                  {stateLabel(operator.state, operator.unreadyModels)}
                </span>
              </td>
              <td className="cell-number">{operator.stepCount}</td>
              <td className="cell-number">{operator.latestVersion ?? "—"}</td>
              <td>{operator.models.length > 0 ? operator.models.join(", ") : "—"}</td>
              <td className="cell-nowrap">{formatDateTime(operator.updatedAt)}</td>
              <td className="cell-actions">
                {canManage && operator.stored ? <DeleteOperatorButton name={operator.name} /> : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

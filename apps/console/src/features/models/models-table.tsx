"use client";

import { formatInteger } from "@/lib/number-format";
import Link from "next/link";
import { ModelActions } from "./model-actions";
import type { ModelSummary } from "./model-state";
import { ModelStateBadge } from "./model-state-badge";
import { TableScroller } from "@/components/table-scroller";

export function modelHref(name: string): string {
  return `/models/${encodeURIComponent(name)}`;
}

export function ModelsTable({ models, canManage }: { models: readonly ModelSummary[]; canManage: boolean }) {
  return (
    <TableScroller label="Models">
      <table className="stack-table">
        <caption className="visually-hidden">Models</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Source</th>
            <th scope="col">State</th>
            <th scope="col">Versions</th>
            <th scope="col">Instances</th>
            <th scope="col">Inferences</th>
            {canManage ? (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {models.map((model) => (
            <tr key={model.name}>
              <th scope="row">
                <Link href={modelHref(model.name)}>{model.name}</Link>
                {model.description ? <span className="cell-note">{model.description}</span> : null}
              </th>
              <td data-label="Source">{model.source === "uploaded" ? "Uploaded" : "Repository"}</td>
              <td data-label="State">
                <ModelStateBadge state={model.state} reason={model.reason} />
              </td>
              <td data-label="Versions">
                {model.versions.length > 0 ? model.versions.map((version) => version.version).join(", ") : "—"}
              </td>
              <td data-label="Instances">{model.instanceCount}</td>
              <td data-label="Inferences">{formatInteger(model.inferenceCount)}</td>
              {canManage ? (
                <td className="cell-actions">
                  <ModelActions model={model} />
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

"use client";

import Link from "next/link";
import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { formatInteger } from "@/lib/number-format";
import { operatorHref } from "../operators/operator-labels";
import { ModelActions } from "./model-actions";
import type { ModelSummary } from "./model-state";
import { ModelStateBadge } from "./model-state-badge";

export function modelHref(name: string): string {
  return `/models/${encodeURIComponent(name)}`;
}

export function modelSourceLabel(source: ModelSummary["source"]): string {
  return source === "uploaded" ? "Uploaded" : source === "operator" ? "Operator" : "Repository";
}

/** The backend as Triton names it (`onnxruntime`), else the platform (`onnxruntime_onnx`), else "—". */
export function backendLabel(model: Pick<ModelSummary, "backend" | "platform">): string {
  return model.backend || model.platform || "—";
}

const COLUMNS: DataColumn<ModelSummary>[] = [
  {
    id: "name",
    header: "Name",
    rowHeader: true,
    sortValue: (model) => model.name,
    cell: (model) => (
      <>
        <Link href={model.source === "operator" ? operatorHref(model.name) : modelHref(model.name)}>
          <TruncatedText text={model.name} />
        </Link>
        {model.description ? <span className="cell-note">{model.description}</span> : null}
        {model.usedBy.length > 0 ? (
          <span className="cell-note">
            used by <TruncatedText text={model.usedBy.join(", ")} size="short" />
          </span>
        ) : null}
      </>
    ),
  },
  {
    id: "source",
    header: "Source",
    sortValue: (model) => model.source,
    cell: (model) => modelSourceLabel(model.source),
  },
  {
    id: "backend",
    header: "Backend",
    sortValue: (model) => backendLabel(model),
    cell: (model) => <TruncatedText text={backendLabel(model)} size="short" />,
  },
  {
    id: "state",
    header: "State",
    sortValue: (model) => model.state,
    cell: (model) => <ModelStateBadge state={model.state} reason={model.reason} />,
  },
  {
    id: "versions",
    header: "Versions",
    cell: (model) => (model.versions.length > 0 ? model.versions.map((version) => version.version).join(", ") : "—"),
  },
  {
    id: "instances",
    header: "Instances",
    numeric: true,
    sortValue: (model) => model.instanceCount,
    cell: (model) => model.instanceCount,
  },
  {
    id: "inferences",
    header: "Inferences",
    numeric: true,
    sortValue: (model) => model.inferenceCount,
    cell: (model) => formatInteger(model.inferenceCount),
  },
];

const ACTIONS: DataColumn<ModelSummary> = {
  id: "actions",
  header: "Actions",
  hideHeader: true,
  actions: true,
  cell: (model) => <ModelActions model={model} />,
};

export function ModelsTable({ models, canManage }: { models: readonly ModelSummary[]; canManage: boolean }) {
  return (
    <DataTable
      label="Models"
      columns={canManage ? [...COLUMNS, ACTIONS] : COLUMNS}
      rows={models}
      rowKey={(model) => model.name}
      initialSort={{ column: "name" }}
      empty={{ title: "No model matches" }}
    />
  );
}

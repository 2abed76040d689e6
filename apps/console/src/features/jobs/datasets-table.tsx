"use client";

import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import type { RouterOutputs } from "@/lib/api-types";

type Dataset = RouterOutputs["datasets"]["list"][number];
type Preview = RouterOutputs["datasets"]["preview"]["preview"];

/** The Datasets list: name, file (and where it lives), query, key columns, and the button that previews it. */
export function DatasetsTable({
  datasets,
  previewId,
  onPreview,
}: {
  datasets: readonly Dataset[];
  previewId: string | null;
  onPreview: (id: string) => void;
}) {
  const columns: DataColumn<Dataset>[] = [
    {
      id: "name",
      header: "Name",
      rowHeader: true,
      sortValue: (dataset) => dataset.name,
      cell: (dataset) => <TruncatedText text={dataset.name} />,
    },
    {
      id: "file",
      header: "File",
      sortValue: (dataset) => dataset.file,
      cell: (dataset) => (
        <>
          <TruncatedText text={dataset.file} size="short" />
          <span className="cell-note">{dataset.source.toLowerCase().replace("_", " ")}</span>
        </>
      ),
    },
    { id: "query", header: "Query", cell: (dataset) => <TruncatedText text={dataset.query} size="wide" as="code" /> },
    {
      id: "keys",
      header: "Keys",
      sortValue: (dataset) => dataset.keyColumns.join(", "),
      cell: (dataset) => dataset.keyColumns.join(", ") || "–",
    },
    {
      id: "actions",
      header: "Actions",
      hideHeader: true,
      actions: true,
      cell: (dataset) => (
        <button
          type="button"
          className="button"
          onClick={() => onPreview(dataset.id)}
          aria-expanded={previewId === dataset.id}
        >
          {previewId === dataset.id ? "Hide preview" : "Preview"}
        </button>
      ),
    },
  ];
  return <DataTable label="Datasets" columns={columns} rows={datasets} rowKey={(dataset) => dataset.id} />;
}

type PreviewRow = { index: number; values: Preview["rows"][number] };

/**
 * A dataset's first rows, one column per column of its query's schema (so the columns are known only at run time).
 * The rows keep the query's order: it is a preview, not a list to sort.
 */
export function FirstRowsTable({ preview }: { preview: Preview }) {
  const columns: DataColumn<PreviewRow>[] = preview.columns.map((column) => ({
    id: column.name,
    header: column.name,
    cell: (row) => cellText(row.values[column.name]),
  }));
  const rows = preview.rows.map((values, index) => ({ index, values }));
  return (
    <DataTable
      label="First rows"
      columns={columns}
      rows={rows}
      rowKey={(row) => String(row.index)}
      empty={{ title: "The query returns no rows" }}
    />
  );
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

"use client";

import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { topK } from "./top-k";

/** One output tensor as KServe v2 JSON gives it; `truncated` when the gateway kept only its first values. */
export interface OutputTensor {
  name: string;
  datatype: string;
  shape: readonly number[];
  data: readonly unknown[];
  truncated?: boolean;
}

const TOP = 5;

/** "7 (0.912)": an index and its value, as a classifier's reader wants them. */
function formatRanked(entry: { index: number; value: number }): string {
  return `${entry.index} (${Number(entry.value.toPrecision(4))})`;
}

/** Saves the tensor as JSON ({name, datatype, shape, data}) through a temporary link: no server round trip. */
function download(output: OutputTensor): void {
  const blob = new Blob([JSON.stringify(output)], { type: "application/json" });
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = `${output.name.replace(/[^A-Za-z0-9_.-]+/g, "_") || "output"}.json`;
  document.body.append(link);
  link.click();
  link.remove();
  URL.revokeObjectURL(url);
}

/**
 * The outputs of a Try it request (a model's or an operator's): each tensor's data, cut to `maxValues`, and for
 * numeric outputs the argmax and top 5 (a classifier's answer at a glance rather than 1,000 numbers), with a
 * download of the whole tensor (issue 27, item 6).
 */
export function TensorOutputsTable({
  outputs,
  caption = "Outputs",
  maxValues = 64,
}: {
  outputs: readonly OutputTensor[];
  caption?: string;
  maxValues?: number;
}) {
  const columns: DataColumn<OutputTensor>[] = [
    {
      id: "name",
      header: "Output",
      rowHeader: true,
      cell: (output) => <TruncatedText text={output.name} size="short" />,
    },
    { id: "datatype", header: "Datatype", cell: (output) => output.datatype },
    { id: "shape", header: "Shape", nowrap: true, cell: (output) => `[${output.shape.join(", ")}]` },
    {
      id: "top",
      header: `Argmax, top ${TOP}`,
      label: `Argmax, top ${TOP}`,
      cell: (output) => {
        const ranked = topK(output.data, TOP);
        if (ranked.length === 0) return <span className="muted">—</span>;
        return (
          <span className="tensor-top">
            <strong>argmax {ranked[0]!.index}</strong>
            <span className="cell-sub">
              top {ranked.length}: {ranked.map(formatRanked).join(", ")}
            </span>
          </span>
        );
      },
    },
    {
      id: "data",
      header: "Data",
      cell: (output) => (
        <>
          <code className="data-values tensor-data">
            [
            {output.data
              .slice(0, maxValues)
              .map((value) => JSON.stringify(value))
              .join(", ")}
            {output.data.length > maxValues ? `, … (${output.data.length} values)` : ""}]
          </code>
          {output.truncated ? <span className="cell-sub">first {output.data.length} values shown</span> : null}
        </>
      ),
    },
    {
      id: "download",
      header: "Download",
      hideHeader: true,
      actions: true,
      cell: (output) => (
        <button
          type="button"
          className="button"
          aria-label={`Download JSON of ${output.name}`}
          onClick={() => download(output)}
        >
          Download JSON
        </button>
      ),
    },
  ];
  return <DataTable label={caption} columns={columns} rows={outputs} rowKey={(output) => output.name} stack={false} />;
}

import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import type { TensorMetadata } from "./model-detail-types";

const COLUMNS: DataColumn<TensorMetadata>[] = [
  {
    id: "name",
    header: "Name",
    rowHeader: true,
    cell: (tensor) => <TruncatedText as="code" text={tensor.name} />,
  },
  { id: "datatype", header: "Datatype", cell: (tensor) => tensor.datatype ?? "—" },
  { id: "shape", header: "Shape", nowrap: true, cell: (tensor) => `[${tensor.shape.join(", ")}]` },
];

/** Inputs or outputs as the gateway's metadata gives them (-1: any size; the first is the batch when the model batches). */
export function ModelTensorsTable({ caption, tensors }: { caption: string; tensors: readonly TensorMetadata[] }) {
  return (
    <DataTable
      label={caption}
      captionVisible
      stack={false}
      columns={COLUMNS}
      rows={tensors}
      rowKey={(tensor) => tensor.name}
      empty={{ title: "None known (the model is not loaded and has no stored config)." }}
    />
  );
}

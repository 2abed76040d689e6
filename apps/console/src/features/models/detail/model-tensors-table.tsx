import type { TensorMetadata } from "./model-detail-types";
import { TableScroller } from "@/components/table-scroller";

/** Inputs or outputs as the gateway's metadata gives them (-1: any size; the first is the batch when the model batches). */
export function ModelTensorsTable({ caption, tensors }: { caption: string; tensors: readonly TensorMetadata[] }) {
  return (
    <TableScroller label={caption}>
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Datatype</th>
            <th scope="col">Shape</th>
          </tr>
        </thead>
        <tbody>
          {tensors.length === 0 ? (
            <tr>
              <td colSpan={3} className="muted">
                None known (the model is not loaded and has no stored config).
              </td>
            </tr>
          ) : (
            tensors.map((tensor) => (
              <tr key={tensor.name}>
                <th scope="row">
                  <code>{tensor.name}</code>
                </th>
                <td>{tensor.datatype ?? "—"}</td>
                <td className="cell-nowrap">[{tensor.shape.join(", ")}]</td>
              </tr>
            ))
          )}
        </tbody>
      </table>
    </TableScroller>
  );
}

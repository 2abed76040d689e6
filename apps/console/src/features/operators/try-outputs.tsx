import { TableScroller } from "@/components/table-scroller";

/**
 * Tensors as a table, one row per tensor (KServe v2 JSON): the operator's
 * answer, or the outputs of one step. Long data is cut to `maxValues` here;
 * a tensor marked `truncated` was already cut by the gateway (step outputs
 * keep only their first values), which the row says.
 */
const SHOWN_VALUES = 64;

interface OutputTensor {
  name?: unknown;
  datatype?: unknown;
  shape?: unknown;
  data?: unknown;
  truncated?: unknown;
}

export function TryOutputs({
  outputs,
  caption = "Outputs",
  maxValues = SHOWN_VALUES,
}: {
  outputs: readonly unknown[];
  caption?: string;
  maxValues?: number;
}) {
  return (
    <TableScroller label={caption}>
      <table>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Output</th>
            <th scope="col">Datatype</th>
            <th scope="col">Shape</th>
            <th scope="col">Data</th>
          </tr>
        </thead>
        <tbody>
          {outputs.map((raw, index) => {
            const output = (typeof raw === "object" && raw !== null ? raw : {}) as OutputTensor;
            const data = Array.isArray(output.data) ? output.data : [];
            return (
              <tr key={index}>
                <th scope="row">{String(output.name ?? `#${index}`)}</th>
                <td>{String(output.datatype ?? "—")}</td>
                <td className="cell-nowrap">{Array.isArray(output.shape) ? `[${output.shape.join(", ")}]` : "—"}</td>
                <td>
                  <code className="data-values">
                    {data
                      .slice(0, maxValues)
                      .map((value) => JSON.stringify(value))
                      .join(", ")}
                    {data.length > maxValues ? `, … (${data.length} values)` : ""}
                  </code>
                  {output.truncated === true ? (
                    <span className="cell-sub">first {data.length} values shown</span>
                  ) : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </TableScroller>
  );
}

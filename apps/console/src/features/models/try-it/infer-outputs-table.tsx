import type { RouterOutputs } from "@/lib/api-types";
import { TableScroller } from "@/components/table-scroller";

export type InferResult = RouterOutputs["models"]["infer"];

const SHOWN_VALUES = 256;

function formatData(data: readonly unknown[]): string {
  const shown = data.slice(0, SHOWN_VALUES).map((value) => JSON.stringify(value));
  return `[${shown.join(", ")}${data.length > SHOWN_VALUES ? `, … (${data.length} values)` : ""}]`;
}

/** The answer: each output tensor, and how long the round trip through the gateway took. */
export function InferOutputsTable({ result }: { result: InferResult }) {
  return (
    <div className="try-result" aria-labelledby="try-result-title">
      <h3 id="try-result-title">Result</h3>
      <p>
        Version {result.modelVersion || "?"} answered in{" "}
        <strong className="try-latency">{result.latencyMs.toFixed(2)} ms</strong> (round trip through the gateway).
      </p>
      <TableScroller label="Outputs">
        <table>
          <caption className="visually-hidden">Outputs</caption>
          <thead>
            <tr>
              <th scope="col">Output</th>
              <th scope="col">Datatype</th>
              <th scope="col">Shape</th>
              <th scope="col">Data</th>
            </tr>
          </thead>
          <tbody>
            {result.outputs.map((output) => (
              <tr key={output.name}>
                <th scope="row">{output.name}</th>
                <td>{output.datatype}</td>
                <td className="cell-nowrap">[{output.shape.join(", ")}]</td>
                <td>
                  <code className="tensor-data">{formatData(output.data)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroller>
    </div>
  );
}

/** The operator's answer: one row per output tensor (KServe v2 JSON), long data cut short. */
const SHOWN_VALUES = 64;

interface OutputTensor {
  name?: unknown;
  datatype?: unknown;
  shape?: unknown;
  data?: unknown;
}

export function TryOutputs({ outputs }: { outputs: readonly unknown[] }) {
  return (
    <div className="table-wrap">
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
                    {data.slice(0, SHOWN_VALUES).map((value) => JSON.stringify(value)).join(", ")}
                    {data.length > SHOWN_VALUES ? `, … (${data.length} values)` : ""}
                  </code>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

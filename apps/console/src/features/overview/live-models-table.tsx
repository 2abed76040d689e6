import { formatBytes, formatInteger, formatMs, formatNumber, formatPercent, usToMs } from "@/lib/number-format";
import type { CurrentModel } from "./overview-types";
import { TableScroller } from "@/components/table-scroller";

/** Per model version: the gateway's live counters and latency summary, the workers, the last sample's rate. */
export function LiveModelsTable({ models }: { models: readonly CurrentModel[] }) {
  return (
    <TableScroller label="Live numbers per model version">
      <table>
        <caption className="visually-hidden">Live numbers per model version</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Version</th>
            <th scope="col" className="cell-number">
              Requests
            </th>
            <th scope="col" className="cell-number">
              Errors
            </th>
            <th scope="col" className="cell-number">
              Req/s
            </th>
            <th scope="col" className="cell-number">
              p50
            </th>
            <th scope="col" className="cell-number">
              p99
            </th>
            <th scope="col" className="cell-number">
              Instances
            </th>
            <th scope="col" className="cell-number">
              CPU
            </th>
            <th scope="col" className="cell-number">
              Memory
            </th>
          </tr>
        </thead>
        <tbody>
          {models.map((entry) => (
            <tr key={`${entry.model}/${entry.version}`}>
              <th scope="row">
                {entry.model}
                {entry.isOperator ? <span className="badge badge-quiet">operator</span> : null}
              </th>
              <td>{entry.version}</td>
              <td className="cell-number">{formatInteger(entry.requests)}</td>
              <td className="cell-number">{formatInteger(entry.errors)}</td>
              <td className="cell-number">{entry.lastSample ? formatNumber(entry.lastSample.requestsPerSec) : "—"}</td>
              <td className="cell-number">{formatMs(usToMs(entry.latencyUs.p50))}</td>
              <td className="cell-number">{formatMs(usToMs(entry.latencyUs.p99))}</td>
              <td className="cell-number">
                {entry.instances === null ? "—" : `${entry.readyInstances ?? 0}/${entry.instances}`}
              </td>
              <td className="cell-number">{formatPercent(entry.lastSample?.cpuUtilization)}</td>
              <td className="cell-number">{formatBytes(entry.memoryBytes)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

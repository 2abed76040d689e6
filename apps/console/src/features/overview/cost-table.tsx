import { formatInteger, formatMoney, formatNumber } from "@/lib/number-format";
import type { CostReport } from "./overview-types";
import { TableScroller } from "@/components/table-scroller";

/** Per model and hardware profile: what the charts show, with the figures behind them. */
export function CostTable({ report }: { report: CostReport }) {
  return (
    <TableScroller label="Cost per model and hardware profile">
      <table className="wrapping-headers">
        <caption className="visually-hidden">Cost per model and hardware profile</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Hardware profile</th>
            <th scope="col" className="cell-number">
              Inferences
            </th>
            <th scope="col" className="cell-number">
              Host CPU used (s)
            </th>
            <th scope="col" className="cell-number">
              Host GPU used (s)
            </th>
            <th scope="col" className="cell-number">
              CPU cost
            </th>
            <th scope="col" className="cell-number">
              GPU cost
            </th>
            <th scope="col" className="cell-number">
              Cost
            </th>
            <th scope="col" className="cell-number">
              Cost per hour
            </th>
            <th scope="col" className="cell-number">
              Cost per 1,000 inferences
            </th>
          </tr>
        </thead>
        <tbody>
          {report.models.map((entry) => (
            <tr key={`${entry.profileId}/${entry.model}`}>
              <th scope="row">{entry.model}</th>
              <td>{entry.profileName}</td>
              <td className="cell-number">{formatInteger(entry.inferences)}</td>
              <td className="cell-number">{formatNumber(entry.cpuShareHours * 3600, 3)}</td>
              <td className="cell-number">{formatNumber(entry.gpuShareHours * 3600, 3)}</td>
              <td className="cell-number">{formatMoney(entry.cpuCost, entry.currency)}</td>
              <td className="cell-number">{formatMoney(entry.gpuCost, entry.currency)}</td>
              <td className="cell-number">{formatMoney(entry.cost, entry.currency)}</td>
              <td className="cell-number">{formatMoney(entry.costPerHour, entry.currency)}</td>
              <td className="cell-number">{formatMoney(entry.costPer1000Inferences, entry.currency)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

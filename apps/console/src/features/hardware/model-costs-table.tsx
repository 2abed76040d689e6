import { formatInteger, formatMoney, formatSmall } from "@/lib/number-format";
import type { ModelCost } from "./cost-types";
import { TableScroller } from "@/components/table-scroller";

export function ModelCostsTable({ models, showProfile }: { models: readonly ModelCost[]; showProfile: boolean }) {
  return (
    <TableScroller label="Cost per model">
      <table className="stack-table">
        <caption className="visually-hidden">Cost per model</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            {showProfile ? <th scope="col">Profile</th> : null}
            <th scope="col">Inferences</th>
            <th scope="col">CPU share (host-hours)</th>
            <th scope="col">GPU share (host-hours)</th>
            <th scope="col">CPU cost</th>
            <th scope="col">GPU cost</th>
            <th scope="col">Cost</th>
            <th scope="col">Cost per hour</th>
            <th scope="col">Cost per 1,000 inferences</th>
          </tr>
        </thead>
        <tbody>
          {models.map((model) => (
            <tr key={`${model.profileId}/${model.model}`}>
              <th scope="row">{model.model}</th>
              {showProfile ? <td data-label="Profile">{model.profileName}</td> : null}
              <td data-label="Inferences" className="cell-number">
                {formatInteger(model.inferences)}
              </td>
              <td data-label="CPU share (host-hours)" className="cell-number">
                {formatSmall(model.cpuShareHours)}
              </td>
              <td data-label="GPU share (host-hours)" className="cell-number">
                {formatSmall(model.gpuShareHours)}
              </td>
              <td data-label="CPU cost" className="cell-number">
                {formatMoney(model.cpuCost, model.currency)}
              </td>
              <td data-label="GPU cost" className="cell-number">
                {formatMoney(model.gpuCost, model.currency)}
              </td>
              <td data-label="Cost" className="cell-number">
                {formatMoney(model.cost, model.currency)}
              </td>
              <td data-label="Cost per hour" className="cell-number">
                {formatMoney(model.costPerHour, model.currency)}
              </td>
              <td data-label="Cost per 1,000 inferences" className="cell-number">
                {formatMoney(model.costPer1000Inferences, model.currency, "no inferences")}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

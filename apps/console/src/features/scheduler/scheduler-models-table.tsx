import { TableScroller } from "@/components/table-scroller";
import { formatDateTime } from "@/lib/format";
import { formatNumber } from "@/lib/number-format";
import { PinForm } from "./pin-form";
import type { SchedulerModel } from "./scheduler-types";

/** Each model as the scheduler saw it in its last period; admins pin from here. */
export function SchedulerModelsTable({
  models,
  canPin,
  maxCount,
}: {
  models: readonly SchedulerModel[];
  canPin: boolean;
  maxCount: number;
}) {
  return (
    <TableScroller label="Models the scheduler manages">
      <table className="stack-table">
        <caption className="visually-hidden">Models the scheduler manages</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Instances</th>
            <th scope="col">Demand (req/s)</th>
            <th scope="col">Capacity per instance (req/s)</th>
            <th scope="col">Last request</th>
            <th scope="col">Pinned</th>
            {canPin ? <th scope="col">Pin</th> : null}
          </tr>
        </thead>
        <tbody>
          {models.map((model) => (
            <tr key={model.model}>
              <th scope="row">
                <code>{model.model}</code>
                <span className="cell-note">{model.kind}</span>
              </th>
              <td data-label="Instances" className="cell-number">
                {model.parked ? "unloaded (loads on demand)" : model.instances}
              </td>
              <td data-label="Demand (req/s)" className="cell-number">
                {formatNumber(model.demandRps, 1)}
              </td>
              <td data-label="Capacity per instance (req/s)" className="cell-number">
                {formatNumber(model.capacityRps, 1)}{" "}
                <span className="cell-note">
                  {model.capacitySource === "report" ? "from the latest perf report" : "default (no perf report)"}
                </span>
              </td>
              <td data-label="Last request">{formatDateTime(model.lastUsedAt, "none yet")}</td>
              <td data-label="Pinned" className="cell-number">
                {model.pinned ?? "—"}
              </td>
              {canPin ? (
                <td data-label="Pin">
                  <PinForm model={model.model} pinned={model.pinned} current={model.instances} maxCount={maxCount} />
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

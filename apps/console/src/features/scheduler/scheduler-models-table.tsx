import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { formatDateTime } from "@/lib/format";
import { formatMs, formatNumber } from "@/lib/number-format";
import { PinForm } from "./pin-form";
import type { SchedulerModel } from "./scheduler-types";

/** Where the capacity comes from, and why a default when it is one (issue 27, item 7). */
export function capacityNote(model: Pick<SchedulerModel, "capacitySource" | "defaultReason" | "p99BudgetMs">): string {
  if (model.capacitySource === "report") return "from the latest perf report";
  return model.defaultReason === "over-budget"
    ? `default: no step of its latest perf report kept p99 within ${formatMs(model.p99BudgetMs)}`
    : "default (no perf report)";
}

const time = (value: Date | string | null | undefined) => (value ? new Date(value).getTime() : null);

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
  const columns: DataColumn<SchedulerModel>[] = [
    {
      id: "model",
      header: "Model",
      rowHeader: true,
      sortValue: (model) => model.model,
      cell: (model) => (
        <>
          <TruncatedText as="code" text={model.model} />
          <span className="cell-note">{model.kind}</span>
        </>
      ),
    },
    {
      id: "instances",
      header: "Instances",
      numeric: true,
      sortValue: (model) => (model.parked ? -1 : model.instances),
      cell: (model) => (model.parked ? "unloaded (loads on demand)" : model.instances),
    },
    {
      id: "demand",
      header: "Demand (req/s)",
      numeric: true,
      sortValue: (model) => model.demandRps,
      cell: (model) => formatNumber(model.demandRps, 1),
    },
    {
      id: "capacity",
      header: "Capacity per instance (req/s)",
      label: "Capacity per instance (req/s)",
      numeric: true,
      sortValue: (model) => model.capacityRps,
      cell: (model) => (
        <>
          {formatNumber(model.capacityRps, 1)} <span className="cell-note">{capacityNote(model)}</span>
        </>
      ),
    },
    {
      id: "lastRequest",
      header: "Last request",
      sortValue: (model) => time(model.lastUsedAt),
      cell: (model) => formatDateTime(model.lastUsedAt, "none yet"),
    },
    {
      id: "pinned",
      header: "Pinned",
      numeric: true,
      sortValue: (model) => model.pinned,
      cell: (model) => model.pinned ?? "—",
    },
    ...(canPin
      ? [
          {
            id: "pin",
            header: "Pin",
            cell: (model: SchedulerModel) => (
              <PinForm model={model.model} pinned={model.pinned} current={model.instances} maxCount={maxCount} />
            ),
          },
        ]
      : []),
  ];
  return (
    <DataTable
      label="Models the scheduler manages"
      columns={columns}
      rows={models}
      rowKey={(model) => model.model}
      initialSort={{ column: "model" }}
    />
  );
}

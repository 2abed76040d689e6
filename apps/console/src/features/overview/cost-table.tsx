import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { formatInteger, formatMoney, formatNumber, perMillionInferences } from "@/lib/number-format";
import type { CostReport } from "./overview-types";

type CostEntry = CostReport["models"][number];

const COLUMNS: DataColumn<CostEntry>[] = [
  {
    id: "model",
    header: "Model",
    rowHeader: true,
    sortValue: (entry) => entry.model,
    cell: (entry) => <TruncatedText text={entry.model} />,
  },
  {
    id: "profile",
    header: "Hardware profile",
    sortValue: (entry) => entry.profileName,
    cell: (entry) => <TruncatedText text={entry.profileName} size="short" />,
  },
  {
    id: "inferences",
    header: "Inferences",
    numeric: true,
    sortValue: (entry) => entry.inferences,
    cell: (entry) => formatInteger(entry.inferences),
  },
  {
    id: "cpu",
    header: "Host CPU used (s)",
    numeric: true,
    sortValue: (entry) => entry.cpuShareHours,
    cell: (entry) => formatNumber(entry.cpuShareHours * 3600, 3),
  },
  {
    id: "gpu",
    header: "Host GPU used (s)",
    numeric: true,
    sortValue: (entry) => entry.gpuShareHours,
    cell: (entry) => formatNumber(entry.gpuShareHours * 3600, 3),
  },
  {
    id: "cpuCost",
    header: "CPU cost",
    numeric: true,
    sortValue: (entry) => entry.cpuCost,
    cell: (entry) => formatMoney(entry.cpuCost, entry.currency),
  },
  {
    id: "gpuCost",
    header: "GPU cost",
    numeric: true,
    sortValue: (entry) => entry.gpuCost,
    cell: (entry) => formatMoney(entry.gpuCost, entry.currency),
  },
  {
    id: "cost",
    header: "Cost",
    numeric: true,
    sortValue: (entry) => entry.cost,
    cell: (entry) => formatMoney(entry.cost, entry.currency),
  },
  {
    id: "costPerHour",
    header: "Cost per hour",
    numeric: true,
    sortValue: (entry) => entry.costPerHour,
    cell: (entry) => formatMoney(entry.costPerHour, entry.currency),
  },
  {
    id: "costPerMillion",
    header: "Cost per 1M inferences",
    numeric: true,
    sortValue: (entry) => entry.costPer1000Inferences,
    cell: (entry) => formatMoney(perMillionInferences(entry.costPer1000Inferences), entry.currency),
  },
];

/** Per model and hardware profile: what the charts show, with the figures behind them. */
export function CostTable({ report }: { report: CostReport }) {
  return (
    <DataTable
      label="Cost per model and hardware profile"
      className="wrapping-headers"
      columns={COLUMNS}
      rows={report.models}
      rowKey={(entry) => `${entry.profileId}/${entry.model}`}
      initialSort={{ column: "cost", descending: true }}
    />
  );
}

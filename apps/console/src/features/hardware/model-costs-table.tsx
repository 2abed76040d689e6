import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { formatInteger, formatMoney, formatSmall, perMillionInferences } from "@/lib/number-format";
import type { CostLine } from "./cost-types";

/**
 * Models and operators with what they cost. An operator's line is the part of its step models' cost its calls made
 * (services/usage/operator-usage.ts): already in those models' lines, so the profile's totals count models only.
 */
export function ModelCostsTable({ lines, showProfile }: { lines: readonly CostLine[]; showProfile: boolean }) {
  const columns: DataColumn<CostLine>[] = [
    {
      id: "model",
      header: "Model or operator",
      rowHeader: true,
      sortValue: (model) => model.name,
      cell: (model) => <TruncatedText text={model.name} />,
    },
    {
      id: "kind",
      header: "Kind",
      sortValue: (model) => model.kind,
      cell: (model) => (model.kind === "operator" ? "Operator (its steps' share)" : "Model"),
    },
    ...(showProfile
      ? [
          {
            id: "profile",
            header: "Profile",
            sortValue: (model: CostLine) => model.profileName,
            cell: (model: CostLine) => <TruncatedText text={model.profileName} size="short" />,
          },
        ]
      : []),
    {
      id: "inferences",
      header: "Inferences",
      numeric: true,
      sortValue: (model) => model.inferences,
      cell: (model) => formatInteger(model.inferences),
    },
    {
      id: "cpuShare",
      header: "CPU share (host-hours)",
      numeric: true,
      sortValue: (model) => model.cpuShareHours,
      cell: (model) => formatSmall(model.cpuShareHours),
    },
    {
      id: "gpuShare",
      header: "GPU share (host-hours)",
      numeric: true,
      sortValue: (model) => model.gpuShareHours,
      cell: (model) => formatSmall(model.gpuShareHours),
    },
    {
      id: "cpuCost",
      header: "CPU cost",
      numeric: true,
      sortValue: (model) => model.cpuCost,
      cell: (model) => formatMoney(model.cpuCost, model.currency),
    },
    {
      id: "gpuCost",
      header: "GPU cost",
      numeric: true,
      sortValue: (model) => model.gpuCost,
      cell: (model) => formatMoney(model.gpuCost, model.currency),
    },
    {
      id: "cost",
      header: "Cost",
      numeric: true,
      sortValue: (model) => model.cost,
      cell: (model) => formatMoney(model.cost, model.currency),
    },
    {
      id: "costPerHour",
      header: "Cost per hour",
      numeric: true,
      sortValue: (model) => model.costPerHour,
      cell: (model) => formatMoney(model.costPerHour, model.currency),
    },
    {
      id: "costPerMillion",
      header: "Cost per 1M inferences",
      numeric: true,
      sortValue: (model) => model.costPer1000Inferences,
      cell: (model) => formatMoney(perMillionInferences(model.costPer1000Inferences), model.currency, "no inferences"),
    },
  ];
  return (
    <DataTable
      label="Cost per model and operator"
      columns={columns}
      rows={lines}
      rowKey={(model) => `${model.profileId}/${model.kind}/${model.name}`}
      initialSort={{ column: "cost", descending: true }}
    />
  );
}

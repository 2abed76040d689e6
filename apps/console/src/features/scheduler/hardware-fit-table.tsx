import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { formatNumber } from "@/lib/number-format";
import type { SchedulerModel } from "./scheduler-types";

type Candidate = NonNullable<SchedulerModel["hardware"]>["candidates"][number];

/** One row per model and candidate kind (a model whose config allows several kinds: operon_hardware_kinds). */
interface CandidateRow extends Candidate {
  model: string;
  runsOn: SchedulerModel["kind"];
  chosen: boolean;
  reason: string;
}

/** A price to the precision costs per 1,000 inferences need (fractions of a cent). */
function price(value: number | null, currency: string | null): string {
  if (value === null) return "—";
  const text = value >= 1 ? value.toFixed(2) : value.toPrecision(3);
  return currency ? `${text} ${currency}` : text;
}

const COLUMNS: DataColumn<CandidateRow>[] = [
  {
    id: "model",
    header: "Model",
    rowHeader: true,
    sortValue: (row) => `${row.model} ${row.kind}`,
    cell: (row) => (
      <>
        <TruncatedText as="code" text={row.model} size="short" />
        <span className="cell-note">runs on {row.runsOn}</span>
      </>
    ),
  },
  { id: "kind", header: "Kind", cell: (row) => row.kind },
  { id: "profile", header: "Priced on profile", cell: (row) => row.profile ?? "—" },
  {
    id: "capacity",
    header: "Capacity per instance (req/s)",
    numeric: true,
    cell: (row) => formatNumber(row.capacityRps, 1),
  },
  {
    id: "cost",
    header: "Cost per 1,000 inferences",
    numeric: true,
    sortValue: (row) => row.costPer1000,
    cell: (row) => (
      <>
        {price(row.costPer1000, row.currency)}
        {row.instanceHourPrice !== null ? (
          <span className="cell-note">{price(row.instanceHourPrice, row.currency)} an instance-hour</span>
        ) : null}
      </>
    ),
  },
  {
    id: "choice",
    header: "Choice",
    cell: (row) => (row.chosen ? "Chosen" : row.eligible ? "Candidate" : "Not a candidate"),
  },
  { id: "why", header: "Why", cell: (row) => (row.chosen ? row.reason : row.why) },
];

/**
 * Hardware fit: per model whose config allows CPU and GPU, each kind's cost per 1,000 inferences at the p99 budget
 * (from the perf report measured on a profile of that kind) and why one is chosen (the cheapest candidate).
 */
export function HardwareFitTable({ models }: { models: readonly SchedulerModel[] }) {
  const rows: CandidateRow[] = models.flatMap((model) =>
    model.hardware === null
      ? []
      : model.hardware.candidates.map((candidate) => ({
          ...candidate,
          model: model.model,
          runsOn: model.kind,
          chosen: model.hardware!.chosen === candidate.kind,
          reason: model.hardware!.reason,
        })),
  );
  return (
    <DataTable
      label="Hardware fit candidates"
      columns={COLUMNS}
      rows={rows}
      rowKey={(row) => `${row.model}/${row.kind}`}
      initialSort={{ column: "model" }}
      empty={{ title: "No model allows several kinds" }}
    />
  );
}

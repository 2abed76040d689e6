import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import {
  formatInteger,
  formatLatencyValue,
  formatMoney,
  formatNumber,
  perMillionInferences,
  usToMs,
} from "@/lib/number-format";
import { ApplyCandidateButton } from "./apply-candidate-button";
import type { SearchCandidate } from "./config-search-types";
import { candidateLabel } from "./search-view-model";

const DIMENSIONS: Record<string, string> = {
  baseline: "current config",
  instances: "instances",
  maxBatchSize: "max batch size",
  queueDelay: "queue delay",
  preferredBatchSizes: "preferred sizes",
};

/** Every candidate in measurement order; the recommended one marked, and an apply button per measured one for those who may. */
export function CandidatesTable({
  candidates,
  recommendedIndex,
  appliedIndex,
  currency,
  model,
  onApply,
}: {
  candidates: readonly SearchCandidate[];
  recommendedIndex: number | null;
  appliedIndex: number | null;
  currency: string | null;
  model: string;
  /** Absent for viewers. */
  onApply?: ((index: number) => Promise<unknown>) | undefined;
}) {
  const verdictOf = (candidate: SearchCandidate) =>
    [
      candidate.index === recommendedIndex ? "recommended" : null,
      candidate.pareto ? "Pareto front" : null,
      candidate.error ?? (candidate.withinBudget ? "within budget" : "over budget"),
      candidate.index === appliedIndex ? "applied" : null,
    ]
      .filter(Boolean)
      .join(", ");
  const columns: DataColumn<SearchCandidate>[] = [
    {
      id: "index",
      header: "#",
      rowHeader: true,
      numeric: true,
      sortValue: (candidate) => candidate.index,
      cell: (candidate) => candidate.index + 1,
    },
    { id: "config", header: "Config", cell: (candidate) => candidateLabel(candidate) },
    {
      id: "changed",
      header: "Changed",
      sortValue: (candidate) => DIMENSIONS[candidate.dimension] ?? candidate.dimension,
      cell: (candidate) => DIMENSIONS[candidate.dimension] ?? candidate.dimension,
    },
    {
      id: "concurrency",
      header: "Concurrency",
      numeric: true,
      sortValue: (candidate) => candidate.concurrency,
      cell: (candidate) => formatInteger(candidate.concurrency),
    },
    {
      id: "throughput",
      header: "Inferences/s",
      numeric: true,
      sortValue: (candidate) => candidate.throughput,
      cell: (candidate) => formatNumber(candidate.throughput),
    },
    {
      id: "p99",
      header: "p99 (ms)",
      numeric: true,
      sortValue: (candidate) => candidate.latencyP99Us ?? undefined,
      cell: (candidate) => formatLatencyValue(usToMs(candidate.latencyP99Us)),
    },
    {
      id: "cost",
      header: "Cost per 1M",
      numeric: true,
      sortValue: (candidate) => (currency === null ? undefined : (candidate.costPer1000 ?? undefined)),
      cell: (candidate) =>
        currency === null ? "—" : formatMoney(perMillionInferences(candidate.costPer1000), currency),
    },
    { id: "verdict", header: "Verdict", cell: verdictOf },
  ];
  if (onApply) {
    columns.push({
      id: "apply",
      header: "Apply",
      cell: (candidate) =>
        candidate.error === null && candidate.throughput > 0 ? (
          <ApplyCandidateButton
            candidate={candidate}
            model={model}
            label="Apply"
            accessibleLabel={`Apply candidate ${candidate.index + 1}`}
            className="button"
            onApply={onApply}
          />
        ) : null,
    });
  }
  return (
    <DataTable
      label="Candidates"
      caption="Every candidate measured, in order. p99 and throughput are at the concurrency shown, the best one within the budget."
      captionVisible
      className="search-candidates-table"
      columns={columns}
      rows={candidates}
      rowKey={(candidate) => String(candidate.index)}
      rowClassName={(candidate) => (candidate.index === recommendedIndex ? "row-recommended" : undefined)}
      rowCurrent={(candidate) => candidate.index === recommendedIndex}
      empty={{ title: "No candidates measured yet" }}
    />
  );
}

import { TableScroller } from "@/components/table-scroller";
import { formatInteger, formatMoney, formatNumber } from "@/lib/number-format";
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
  onApply,
  applying,
}: {
  candidates: readonly SearchCandidate[];
  recommendedIndex: number | null;
  appliedIndex: number | null;
  currency: string | null;
  /** Absent for viewers. */
  onApply?: ((index: number) => void) | undefined;
  applying: boolean;
}) {
  return (
    <TableScroller label="Candidates">
      <table className="search-candidates-table">
        <caption>
          Every candidate measured, in order. p99 and throughput are at the concurrency shown, the best one within the
          budget.
        </caption>
        <thead>
          <tr>
            <th scope="col" className="cell-number">
              #
            </th>
            <th scope="col">Config</th>
            <th scope="col">Changed</th>
            <th scope="col" className="cell-number">
              Concurrency
            </th>
            <th scope="col" className="cell-number">
              Inferences/s
            </th>
            <th scope="col" className="cell-number">
              p99 (ms)
            </th>
            <th scope="col" className="cell-number">
              Cost per 1,000
            </th>
            <th scope="col">Verdict</th>
            {onApply ? <th scope="col">Apply</th> : null}
          </tr>
        </thead>
        <tbody>
          {candidates.map((candidate) => {
            const verdict = [
              candidate.index === recommendedIndex ? "recommended" : null,
              candidate.pareto ? "Pareto front" : null,
              candidate.error ?? (candidate.withinBudget ? "within budget" : "over budget"),
              candidate.index === appliedIndex ? "applied" : null,
            ].filter(Boolean);
            const measured = candidate.error === null && candidate.throughput > 0;
            return (
              <tr
                key={candidate.index}
                className={candidate.index === recommendedIndex ? "row-recommended" : undefined}
                aria-current={candidate.index === recommendedIndex ? "true" : undefined}
              >
                <th scope="row" className="cell-number">
                  {candidate.index + 1}
                </th>
                <td>{candidateLabel(candidate)}</td>
                <td>{DIMENSIONS[candidate.dimension] ?? candidate.dimension}</td>
                <td className="cell-number">{formatInteger(candidate.concurrency)}</td>
                <td className="cell-number">{formatNumber(candidate.throughput)}</td>
                <td className="cell-number">
                  {formatNumber(candidate.latencyP99Us === null ? null : candidate.latencyP99Us / 1000, 3)}
                </td>
                <td className="cell-number">
                  {currency === null ? "—" : formatMoney(candidate.costPer1000, currency)}
                </td>
                <td>{verdict.join(", ")}</td>
                {onApply ? (
                  <td>
                    {measured ? (
                      <button
                        type="button"
                        className="button"
                        disabled={applying}
                        onClick={() => onApply(candidate.index)}
                        aria-label={`Apply candidate ${candidate.index + 1}`}
                      >
                        Apply
                      </button>
                    ) : null}
                  </td>
                ) : null}
              </tr>
            );
          })}
        </tbody>
      </table>
    </TableScroller>
  );
}

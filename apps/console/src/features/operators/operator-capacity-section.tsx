"use client";

import { useQuery } from "@tanstack/react-query";
import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { FactList } from "@/components/fact-list";
import { QueryView } from "@/components/states/query-view";
import type { RouterOutputs } from "@/lib/api-types";
import { formatMs, formatNumber } from "@/lib/number-format";
import { useTRPC } from "@/lib/trpc";

type OperatorCapacity = RouterOutputs["scheduler"]["operatorCapacity"];
type StepCapacity = OperatorCapacity["steps"][number];

const COLUMNS: DataColumn<StepCapacity>[] = [
  {
    id: "step",
    header: "Step",
    rowHeader: true,
    sortValue: (step) => step.step,
    cell: (step) => (
      <>
        <TruncatedText as="code" text={step.step} size="short" />
        {step.bottleneck ? <span className="cell-note">bottleneck</span> : null}
      </>
    ),
  },
  { id: "model", header: "Model", cell: (step) => <TruncatedText as="code" text={step.model} size="short" /> },
  {
    id: "instances",
    header: "Instances",
    numeric: true,
    sortValue: (step) => step.instances,
    cell: (s) => s.instances,
  },
  {
    id: "perInstance",
    header: "Per instance (req/s)",
    numeric: true,
    sortValue: (step) => step.perInstanceRps,
    cell: (step) => (
      <>
        {formatNumber(step.perInstanceRps, 1)}
        <span className="cell-note">{step.capacitySource === "report" ? "perf report" : "default (no report)"}</span>
      </>
    ),
  },
  { id: "calls", header: "Calls per request", numeric: true, cell: (step) => step.callsPerRequest },
  {
    id: "capacity",
    header: "Capacity (operator req/s)",
    numeric: true,
    sortValue: (step) => step.capacityRps,
    cell: (step) => formatNumber(step.capacityRps, 1),
  },
];

/**
 * The operator's capacity as the resource scheduler counts it (issue 25): the least of its model steps'
 * (per-instance throughput at the p99 budget × instances ÷ calls per request), and the step that sets it.
 */
export function OperatorCapacitySection({ name }: { name: string }) {
  const trpc = useTRPC();
  const capacity = useQuery({ ...trpc.scheduler.operatorCapacity.queryOptions({ name }), refetchInterval: 5000 });
  return (
    <section className="card" aria-labelledby="capacity-title">
      <h2 id="capacity-title">Capacity</h2>
      <QueryView query={capacity} loadingLabel="Computing the capacity…">
        {(data) =>
          data.capacityRps === null ? (
            <p className="muted">No model steps: nothing limits its capacity.</p>
          ) : (
            <>
              <FactList
                facts={[
                  ["Capacity", `${formatNumber(data.capacityRps, 1)} req/s`],
                  ["Bottleneck step", data.bottleneckSteps.join(", ")],
                  ["Demand (last period)", data.demandRps === null ? "—" : `${formatNumber(data.demandRps, 1)} req/s`],
                  ["p99 budget", formatMs(data.p99BudgetMs)],
                ]}
              />
              {data.demandBasis ? <p className="muted">Demand: {data.demandBasis}.</p> : null}
              <DataTable
                label="Capacity per step"
                columns={COLUMNS}
                rows={data.steps}
                rowKey={(step) => step.step}
                empty={{ title: "No model steps" }}
              />
            </>
          )
        }
      </QueryView>
    </section>
  );
}

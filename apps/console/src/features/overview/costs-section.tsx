"use client";

import { formatCount, formatMoney } from "@/lib/number-format";
import type { UseQueryResult } from "@tanstack/react-query";
import Link from "next/link";
import { CategoryBarChart } from "@/features/charts/category-bar-chart";
import { SERIES_COLORS } from "@/features/charts/chart-palette";
import { formatExactTick } from "@/features/charts/number-format";
import { QueryView } from "@/components/states/query-view";
import { costChartRows, reportCurrency, singleProfile } from "./cost-rows";
import { CostTable } from "./cost-table";
import type { CostReport } from "./overview-types";
import { ProfileCostSummary } from "./profile-cost-summary";

/** Cost per hour and per million inferences by model and hardware profile (metrics.costs). */
export function CostsSection({ query }: { query: UseQueryResult<CostReport, unknown> }) {
  return (
    <section className="card" aria-labelledby="costs-title">
      <h2 id="costs-title">Cost</h2>
      <QueryView
        query={query}
        loadingLabel="Loading costs…"
        isEmpty={(report) => report.models.length === 0 && report.unprofiled.length === 0}
        empty={{
          title: "No usage to cost in this range",
          body: <p>Costs come from the same usage samples as the charts.</p>,
        }}
      >
        {(report) => (
          <>
            {report.unprofiled.length > 0 ? <UnprofiledNotice unprofiled={report.unprofiled} /> : null}
            {report.models.length > 0 ? <CostCharts report={report} /> : null}
          </>
        )}
      </QueryView>
    </section>
  );
}

function CostCharts({ report }: { report: CostReport }) {
  const currency = reportCurrency(report);
  const money = (value: number) => (currency ? formatMoney(value, currency) : value.toLocaleString());
  const unit = currency ?? "profile's currency";
  const profile = singleProfile(report);
  const on = profile ? ` on ${profile}` : "";
  const categoryLabel = profile ? "model" : "model · hardware profile";
  return (
    <>
      <p className="muted small">
        The host&apos;s cost per hour is attributed to models by the share of its CPU their workers used; on a GPU
        profile, the GPUs&apos; part of the price by the share of its GPUs their instances used.
      </p>
      <ProfileCostSummary profiles={report.profiles} />
      <div className="figure-grid">
        <CategoryBarChart
          title={`Cost per hour${on}`}
          categoryLabel={categoryLabel}
          valueLabel={`cost per hour (${unit})`}
          rows={costChartRows(report, "costPerHour")}
          series={[{ key: "costPerHour", label: "Cost per hour", color: SERIES_COLORS.primary }]}
          formatValue={money}
          formatAxis={formatExactTick}
          emptyText="No model used measurable CPU in this range."
        />
        <CategoryBarChart
          title={`Cost per 1M inferences${on}`}
          categoryLabel={categoryLabel}
          valueLabel={`cost per 1M inferences (${unit})`}
          rows={costChartRows(report, "costPerMillionInferences")}
          series={[{ key: "costPerMillionInferences", label: "Cost per 1M inferences", color: SERIES_COLORS.p95 }]}
          formatValue={money}
          formatAxis={formatExactTick}
          emptyText="No inferences in this range."
        />
      </div>
      <CostTable report={report} />
    </>
  );
}

function UnprofiledNotice({ unprofiled }: { unprofiled: CostReport["unprofiled"] }) {
  return (
    <div className="notice">
      <p>
        Some usage was sampled without a default hardware profile, so it has no cost. An admin can add one on the{" "}
        <Link href="/hardware">Hardware &amp; cost</Link> page; samples taken after that are costed.
      </p>
      <p className="small">
        Not costed:{" "}
        {unprofiled.map((entry) => `${entry.model} (${formatCount(entry.inferences, "inference")})`).join(", ")}.
      </p>
    </div>
  );
}

"use client";

import { formatCount, formatMoney, perMillionInferences } from "@/lib/number-format";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { SelectField } from "@/components/form/select-field";
import { QueryView } from "@/components/states/query-view";
import { CategoryBarChart } from "@/features/charts/category-bar-chart";
import { SERIES_COLORS } from "@/features/charts/chart-palette";
import { formatExactTick } from "@/features/charts/number-format";
import { TIME_RANGE_OPTIONS, useTimeWindow, type TimeRangeId } from "@/features/charts/time-range";
import { useTRPC } from "@/lib/trpc";
import { costLines, type CostReport } from "./cost-types";
import { ModelCostsTable } from "./model-costs-table";
import { ProfileCostSummary } from "./profile-cost-summary";

/** How the numbers are made (services/cost-model.ts), in one plain sentence. */
function CostModelNote() {
  return (
    <p className="cost-note">
      How this is counted: each host costs its profile&apos;s price for every hour the control plane sampled usage, and
      that cost is shared among the models by their share of the host&apos;s CPU (a model whose workers used a quarter
      of the host&apos;s CPU carries a quarter of its cost); on a GPU profile, the part of the price that pays for the
      GPUs (80 % unless the profile says otherwise) is shared by their share of the host&apos;s GPUs instead, the rest
      by CPU share; what no model used, idle capacity and the gateway itself, stays unattributed.
    </p>
  );
}

function CostReportView({ report }: { report: CostReport }) {
  const multipleProfiles = report.profiles.length > 1;
  const currency = report.models[0]?.currency ?? report.profiles[0]?.currency ?? "USD";
  const label = (model: CostReport["models"][number]) =>
    multipleProfiles ? `${model.model} (${model.profileName})` : model.model;
  const categoryLabel = multipleProfiles ? "model (hardware profile)" : "model";
  const money = (value: number) => formatMoney(value, currency);
  return (
    <>
      {report.profiles.map((profile) => (
        <ProfileCostSummary key={profile.profileId} profile={profile} />
      ))}
      {report.models.length > 0 ? (
        <>
          <div className="figure-grid">
            <CategoryBarChart
              title="Cost per hour"
              categoryLabel={categoryLabel}
              valueLabel={`cost per hour (${currency})`}
              rows={report.models
                .filter((model) => model.costPerHour > 0)
                .map((model) => ({ category: label(model), costPerHour: model.costPerHour }))}
              series={[{ key: "costPerHour", label: "Cost per hour", color: SERIES_COLORS.primary }]}
              formatValue={money}
              formatAxis={formatExactTick}
              emptyText="No model used the CPU in this range."
            />
            <CategoryBarChart
              title="Cost per 1M inferences"
              categoryLabel={categoryLabel}
              valueLabel={`cost per 1M inferences (${currency})`}
              rows={report.models
                .filter((model) => model.costPer1000Inferences !== null)
                .map((model) => ({
                  category: label(model),
                  costPerMillionInferences: perMillionInferences(model.costPer1000Inferences),
                }))}
              series={[{ key: "costPerMillionInferences", label: "Cost per 1M inferences", color: SERIES_COLORS.p95 }]}
              formatValue={money}
              formatAxis={formatExactTick}
              emptyText="No inferences in this range."
            />
          </div>
          <ModelCostsTable lines={costLines(report.models, report.operators)} showProfile={multipleProfiles} />
          {report.operators.length > 0 ? (
            <p className="muted small">
              An operator&apos;s cost is the part of its step models&apos; cost that its calls made. It is already in
              those models&apos; lines, so the totals above count it once.
            </p>
          ) : null}
        </>
      ) : null}
      {report.costedOnDefault !== null ? (
        <p className="muted small">
          Usage sampled before any hardware profile existed (
          {formatCount(report.costedOnDefault.inferences, "inference")}) is costed on the default profile,{" "}
          {report.costedOnDefault.profileName}.
        </p>
      ) : null}
      {report.unprofiled.length > 0 ? (
        <p className="notice">
          Not costed (sampled while no profile was the default):{" "}
          {report.unprofiled
            .map((entry) => `${entry.model} (${formatCount(entry.inferences, "inference")})`)
            .join(", ")}
          .
        </p>
      ) : null}
    </>
  );
}

export function CostsSection() {
  const trpc = useTRPC();
  const [range, setRange] = useState<TimeRangeId>("24h");
  const timeWindow = useTimeWindow(range, 60_000);
  const costs = useQuery({ ...trpc.metrics.costs.queryOptions(timeWindow), placeholderData: keepPreviousData });
  return (
    <section className="card" aria-labelledby="costs-title">
      <div className="section-header">
        <h2 id="costs-title">Costs</h2>
        <div className="inline-select">
          <SelectField
            label="Time range"
            name="range"
            options={TIME_RANGE_OPTIONS}
            value={range}
            onChange={(event) => setRange(event.target.value as TimeRangeId)}
          />
        </div>
      </div>
      <CostModelNote />
      <QueryView
        query={costs}
        loadingLabel="Adding up costs…"
        isEmpty={(report) => report.profiles.length === 0 && report.unprofiled.length === 0}
        empty={{
          title: "No usage in this range yet",
          body: (
            <p>
              The control plane samples the gateway's usage (every 15 s unless{" "}
              <code>operon serve --usage-sample-secs</code> says otherwise) while models are loaded; usage is costed
              once a hardware profile is the default.
            </p>
          ),
        }}
      >
        {(report) => <CostReportView report={report} />}
      </QueryView>
    </section>
  );
}

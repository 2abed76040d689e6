"use client";

import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { SelectField } from "@/components/form/select-field";
import { EmptyState } from "@/components/states/empty-state";
import { QueryView } from "@/components/states/query-view";
import { useTRPC } from "@/lib/trpc";
import { formatCount } from "../models/units";
import { TIME_RANGES, useTimeWindow, type TimeRangeValue } from "../models/time-range";
import { CostBarChart } from "./cost-bar-chart";
import type { CostReport } from "./cost-types";
import { ModelCostsTable } from "./model-costs-table";
import { ProfileCostSummary } from "./profile-cost-summary";

/** How the numbers are made (services/cost-model.ts), in one plain sentence. */
function CostModelNote() {
  return (
    <p className="cost-note">
      How this is counted: each host costs its profile&apos;s price for every hour the control plane sampled usage, and that cost is shared among the models by
      their share of the host&apos;s CPU (a model whose workers used a quarter of the host&apos;s CPU carries a quarter of its cost); what no model used, idle
      capacity and the gateway itself, stays unattributed.
    </p>
  );
}

function CostReportView({ report }: { report: CostReport }) {
  const multipleProfiles = report.profiles.length > 1;
  const currency = report.models[0]?.currency ?? report.profiles[0]?.currency ?? "USD";
  const label = (model: CostReport["models"][number]) => (multipleProfiles ? `${model.model} (${model.profileName})` : model.model);
  return (
    <>
      {report.profiles.map((profile) => (
        <ProfileCostSummary key={profile.profileId} profile={profile} />
      ))}
      {report.models.length > 0 ? (
        <>
          <div className="chart-grid">
            <CostBarChart
              title="Cost per hour"
              currency={currency}
              color="#1f5fbf"
              empty="No model used the CPU in this range."
              bars={report.models.filter((model) => model.costPerHour > 0).map((model) => ({ label: label(model), value: model.costPerHour }))}
            />
            <CostBarChart
              title="Cost per 1,000 inferences"
              currency={currency}
              color="#1c6b37"
              empty="No inferences in this range."
              bars={report.models.filter((model) => model.costPer1000Inferences !== null).map((model) => ({ label: label(model), value: model.costPer1000Inferences ?? 0 }))}
            />
          </div>
          <ModelCostsTable models={report.models} showProfile={multipleProfiles} />
        </>
      ) : null}
      {report.unprofiled.length > 0 ? (
        <p className="notice">
          Not costed (sampled while no profile was the default):{" "}
          {report.unprofiled.map((entry) => `${entry.model} (${formatCount(entry.inferences)} inferences)`).join(", ")}.
        </p>
      ) : null}
    </>
  );
}

export function CostsSection() {
  const trpc = useTRPC();
  const [range, setRange] = useState<TimeRangeValue>("24h");
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
            options={TIME_RANGES.map(({ value, label }) => ({ value, label }))}
            value={range}
            onChange={(event) => setRange(event.target.value as TimeRangeValue)}
          />
        </div>
      </div>
      <CostModelNote />
      <QueryView
        query={costs}
        loadingLabel="Adding up costs…"
        isEmpty={(report) => report.profiles.length === 0 && report.unprofiled.length === 0}
        empty={{ title: "No usage in this range yet", body: <p>The control plane samples the gateway's usage (every 15 s unless `operon serve --usage-sample-secs` says otherwise) while models are loaded; usage is costed once a hardware profile is the default.</p> }}
      >
        {(report) => <CostReportView report={report} />}
      </QueryView>
    </section>
  );
}

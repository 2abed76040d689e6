"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { PageHeader } from "@/components/page-header";
import { useSignedInUser } from "@/components/shell/session-context";
import { QueryView } from "@/components/states/query-view";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { CustomStepVersionForm } from "../custom-step/custom-step-version-form";
import { ModelActions } from "../model-actions";
import { operatorHref } from "../../operators/operator-labels";
import { MODEL_POLL_MS } from "../model-state";
import { ModelStateBadge } from "../model-state-badge";
import { TryItPanel } from "../try-it/try-it-panel";
import { ModelConfigSection } from "./model-config-section";
import type { ModelDetail } from "./model-detail-types";
import { ModelFacts } from "./model-facts";
import { ModelStatistics } from "./model-statistics";
import { ModelTensorsTable } from "./model-tensors-table";
import { ModelUsageCharts } from "./model-usage-charts";
import { ModelVersionsTable } from "./model-versions-table";
import { LatestPerfReport } from "../../perf/latest-perf-report";
import { isPending } from "../../perf/perf-types";
import { PerfInputsSection } from "../../perf/perf-inputs-section";

/** The platform the API gives custom steps (uploaded TypeScript, run sandboxed): they get a new-version form. */
const CUSTOM_STEP_PLATFORM = "custom_step";

/** Settled states: READY or UNAVAILABLE; anything else is asked about again until it settles. */
function settled(state: ModelDetail["state"]): boolean {
  return state === "READY" || state === "UNAVAILABLE";
}

export function ModelDetailPage({ name }: { name: string }) {
  const trpc = useTRPC();
  const model = useQuery({
    ...trpc.models.get.queryOptions({ name }),
    refetchInterval: (query) => (query.state.data && !settled(query.state.data.state) ? MODEL_POLL_MS : false),
  });
  return (
    <>
      <PageHeader title={name}>
        <p>
          <Link href="/models">All models</Link>
        </p>
      </PageHeader>
      <QueryView query={model} loadingLabel="Loading the model…">
        {(data) => <ModelDetailSections model={data} />}
      </QueryView>
    </>
  );
}

function ModelDetailSections({ model }: { model: ModelDetail }) {
  const user = useSignedInUser();
  const router = useRouter();
  const canManage = hasRole(user.role, "ENGINEER");
  const trpc = useTRPC();
  // Each version's latest perf report and its comparison with the previous version's; refreshed while a run is pending.
  const versionPerf = useQuery({
    ...trpc.perf.versions.queryOptions({ model: model.name }),
    refetchInterval: (query) =>
      query.state.data?.some((entry) => entry.latest !== null && isPending(entry.latest.status)) ? 3000 : 15_000,
  });
  return (
    <>
      <section className="card" aria-labelledby="state-title">
        <div className="section-header">
          <h2 id="state-title">State</h2>
          {canManage ? <ModelActions model={model} onDeleted={() => router.push("/models")} /> : null}
        </div>
        <p className="model-state-line" role="status" aria-live="polite">
          <ModelStateBadge state={model.state} reason={model.reason} />
          {!settled(model.state) ? <span className="muted small"> (checking again every few seconds)</span> : null}
        </p>
        {model.source === "operator" ? (
          <p className="notice" role="note">
            This is an operator: the gateway serves it as a model, and its page is{" "}
            <Link href={operatorHref(model.name)}>{model.name} on the Operators page</Link>, where it is changed or
            deleted.
          </p>
        ) : null}
        {model.description ? <p>{model.description}</p> : null}
        <ModelFacts model={model} />
      </section>
      <section className="card" aria-labelledby="versions-title">
        <h2 id="versions-title">Versions</h2>
        <ModelVersionsTable versions={model.versions} perf={versionPerf.data} />
      </section>
      {canManage && model.platform === CUSTOM_STEP_PLATFORM ? <CustomStepVersionForm name={model.name} /> : null}
      <LatestPerfReport kind="MODEL" name={model.name} canCancel={canManage} />
      {model.state === "READY" ? <PerfInputsSection kind="MODEL" name={model.name} canEdit={canManage} /> : null}
      <section className="card" aria-labelledby="io-title">
        <h2 id="io-title">Inputs and outputs</h2>
        <div className="tensor-tables">
          <ModelTensorsTable caption="Inputs" tensors={model.inputs} />
          <ModelTensorsTable caption="Outputs" tensors={model.outputs} />
        </div>
      </section>
      <section className="card" aria-labelledby="try-title">
        <h2 id="try-title">Try it</h2>
        {model.state === "READY" ? (
          <TryItPanel
            key={model.inputs.map((input) => `${input.name}:${input.datatype}:${input.shape.join("x")}`).join("|")}
            name={model.name}
            inputs={model.inputs}
          />
        ) : (
          <p className="muted">Load the model to send it a request.</p>
        )}
      </section>
      <section className="card" aria-labelledby="stats-title">
        <h2 id="stats-title">Statistics</h2>
        <ModelStatistics statistics={model.statistics} />
      </section>
      <ModelUsageCharts name={model.name} />
      <ModelConfigSection model={model} canEdit={canManage} />
    </>
  );
}

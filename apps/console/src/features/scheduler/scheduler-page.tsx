"use client";

import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { PageHeader } from "@/components/page-header";
import { SelectField } from "@/components/form/select-field";
import { useSignedInUser } from "@/components/shell/session-context";
import { EmptyState } from "@/components/states/empty-state";
import { QueryView } from "@/components/states/query-view";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { CpuBudgetNote } from "./cpu-budget-note";
import { DecisionsTable } from "./decisions-table";
import { GatewayReplicasCard } from "./gateway-replicas-card";
import { HardwareFitTable } from "./hardware-fit-table";
import { SchedulerModelsTable } from "./scheduler-models-table";
import { SchedulerSwitch } from "./scheduler-switch";

const REFRESH_MS = 5_000;
const ALL_MODELS = "";

/**
 * The resource scheduler: its switch, the models as it last saw them
 * (admins pin counts there) and its decisions, filterable by model.
 * Everyone signed in reads; only admins change anything (the API checks).
 */
export function SchedulerPage() {
  const trpc = useTRPC();
  const user = useSignedInUser();
  const isAdmin = hasRole(user.role, "ADMIN");
  const [model, setModel] = useState(ALL_MODELS);
  const status = useQuery({ ...trpc.scheduler.status.queryOptions(), refetchInterval: REFRESH_MS, staleTime: 0 });
  const decisions = useQuery({
    ...trpc.scheduler.decisions.queryOptions(model === ALL_MODELS ? { limit: 100 } : { model, limit: 100 }),
    refetchInterval: REFRESH_MS,
    staleTime: 0,
  });
  const modelNames = [
    ...new Set([
      ...(status.data?.models.map((entry) => entry.model) ?? []),
      ...(status.data?.pins.map((pin) => pin.model) ?? []),
    ]),
  ].sort();
  return (
    <>
      <PageHeader title="Scheduler">
        <p>
          Every period the resource scheduler reads each model's demand from the gateway and its capacity from the
          latest perf report, and sets its instance count to meet demand plus headroom within the host's budget. When
          memory is short it unloads idle models, least recently used first; they load again on their next request.
        </p>
      </PageHeader>
      <QueryView query={status} loadingLabel="Asking the scheduler…">
        {(data) => (
          <>
            <section className="card" aria-labelledby="scheduler-state-title">
              <h2 id="scheduler-state-title">State</h2>
              <SchedulerSwitch enabled={data.enabled} canChange={isAdmin} />
              <p className="muted small">
                Every {data.periodSecs} s; headroom {Math.round(data.policy.headroom * 100)} %; scale-down cooldown{" "}
                {Math.round(data.policy.scaleDownCooldownMs / 1000)} s; at most {data.policy.maxInstancesPerModel}{" "}
                instances per model and {data.budget.cpuSlots} CPU instances in all.
              </p>
              <CpuBudgetNote status={data} />
            </section>
            <GatewayReplicasCard status={data} />
            <section className="card" aria-labelledby="scheduler-models-title">
              <h2 id="scheduler-models-title">Models</h2>
              {data.models.length === 0 ? (
                <EmptyState title="No model seen yet">
                  <p>The scheduler lists the models the gateway serves after its first period.</p>
                </EmptyState>
              ) : (
                <SchedulerModelsTable
                  models={data.models}
                  canPin={isAdmin}
                  maxCount={data.policy.maxInstancesPerModel}
                />
              )}
            </section>
            {data.models.some((entry) => entry.hardware !== null) ? (
              <section className="card" aria-labelledby="scheduler-hardware-title">
                <h2 id="scheduler-hardware-title">Hardware fit</h2>
                <p className="muted small">
                  Models whose config allows several kinds (parameter operon_hardware_kinds) run on the kind where 1,000
                  inferences at the p99 budget cost least: an instance-hour's price over the throughput measured on a
                  hardware profile of that kind. A GPU is a candidate only on a host with GPUs that have free slots and
                  memory.
                </p>
                <HardwareFitTable models={data.models} />
              </section>
            ) : null}
          </>
        )}
      </QueryView>
      <section className="card" aria-labelledby="scheduler-decisions-title">
        <div className="section-header">
          <h2 id="scheduler-decisions-title">Decisions</h2>
          <SelectField
            label="Model"
            name="model"
            value={model}
            onChange={(event) => setModel(event.target.value)}
            options={[
              { value: ALL_MODELS, label: "All models" },
              ...modelNames.map((name) => ({ value: name, label: name })),
            ]}
          />
        </div>
        <QueryView query={decisions} loadingLabel="Reading decisions…">
          {(page) =>
            page.decisions.length === 0 ? (
              <EmptyState title="No decisions yet">
                <p>
                  Decisions appear when demand changes a model's instance count, a pin applies, or memory runs short.
                </p>
              </EmptyState>
            ) : (
              <DecisionsTable decisions={page.decisions} />
            )
          }
        </QueryView>
      </section>
    </>
  );
}

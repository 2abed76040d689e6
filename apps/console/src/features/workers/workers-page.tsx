"use client";

import { useQuery } from "@tanstack/react-query";
import { PageHeader } from "@/components/page-header";
import { EmptyState } from "@/components/states/empty-state";
import { QueryView } from "@/components/states/query-view";
import { formatBytes } from "@/lib/number-format";
import { useTRPC } from "@/lib/trpc";
import { useCpuRates } from "./cpu-rates";
import { ClusterGateways } from "./cluster-gateways";
import { GatewayProcess } from "./gateway-process";
import { instanceCountLine } from "./instance-count-line";
import { workerKey, WorkersTable } from "./workers-table";

const REFRESH_MS = 5_000;
const GATEWAY_KEY = "gateway";

export function WorkersPage() {
  const trpc = useTRPC();
  const workers = useQuery({ ...trpc.workers.list.queryOptions(), refetchInterval: REFRESH_MS, staleTime: 0 });
  const data = workers.data;
  const cpuRates = useCpuRates(
    data ? String(data.readAt) : undefined,
    data
      ? [
          { key: GATEWAY_KEY, pid: data.gateway.pid, cpuSeconds: data.gateway.cpuSeconds },
          ...data.workers.map((worker) => ({ key: workerKey(worker), pid: worker.pid, cpuSeconds: worker.cpuSeconds })),
        ]
      : [],
  );
  return (
    <>
      <PageHeader title="Workers">
        <p>
          Each model instance runs where its backend is trusted to run: ONNX Runtime on a thread of the gateway process
          unless the server&apos;s --backend-isolation or the model&apos;s config says otherwise (a worker process, or
          the gateway&apos;s event loop for tiny models), TypeScript and native backends in a worker process of their
          own (the &quot;Runs in&quot; column says which). This page asks the gateway every {REFRESH_MS / 1000} s. CPU
          now is the share of one core since the previous reading.
        </p>
      </PageHeader>
      <QueryView query={workers} loadingLabel="Asking the gateway…">
        {(list) => (
          <>
            <section className="card" aria-labelledby="gateway-title">
              <h2 id="gateway-title">Gateway process</h2>
              <GatewayProcess data={list} cpuRate={cpuRates.get(GATEWAY_KEY)} />
            </section>
            {list.gateways.length > 0 ? (
              <section className="card" aria-labelledby="cluster-gateways-title">
                <div className="section-header">
                  <h2 id="cluster-gateways-title">Cluster gateways</h2>
                  <span className="muted small">
                    {list.gateways.length === 1 ? "1 gateway" : `${list.gateways.length} gateways`} on this database
                    (operon serve --role gateway)
                  </span>
                </div>
                <ClusterGateways gateways={list.gateways} />
                <p className="muted small">
                  With this control plane's gateway: {list.summed.instances} model instances
                  {list.summed.rssBytes === null ? "" : `, ${formatBytes(list.summed.rssBytes)} of instance memory`}.
                </p>
              </section>
            ) : null}
            <section className="card" aria-labelledby="workers-title">
              <div className="section-header">
                <h2 id="workers-title">Model instances</h2>
                <span className="muted small" aria-live="off">
                  {instanceCountLine(list.workers)}
                </span>
              </div>
              {list.workers.length === 0 ? (
                <EmptyState title="No model instance running">
                  <p>Load a model to start its instances.</p>
                </EmptyState>
              ) : (
                <WorkersTable workers={list.workers} cpuRates={cpuRates} />
              )}
            </section>
          </>
        )}
      </QueryView>
    </>
  );
}

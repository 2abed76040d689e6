import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { formatDateTime } from "@/lib/format";
import { formatMs, formatNumber } from "@/lib/number-format";
import type { SchedulerStatus } from "./scheduler-types";

type GatewayInputs = NonNullable<SchedulerStatus["cluster"]>["gateways"][number];

/**
 * The desired gateway replica count (issue 23) and the inputs it was decided from, per gateway and summed. The
 * scheduler writes the count; Kubernetes' HPA acts on it through the operon_desired_gateway_replicas gauge.
 */
export function GatewayReplicasCard({ status }: { status: Pick<SchedulerStatus, "replicas" | "cluster"> }) {
  const { replicas, cluster } = status;
  const columns: DataColumn<GatewayInputs>[] = [
    {
      id: "gateway",
      header: "Gateway",
      rowHeader: true,
      sortValue: (row) => row.gatewayHost ?? "",
      cell: (row) => (row.gatewayHost === null ? "this control plane's own" : <code>{row.gatewayHost}</code>),
    },
    {
      id: "rps",
      header: "Requests (req/s)",
      numeric: true,
      sortValue: (row) => row.requestsPerSecond,
      cell: (row) => formatNumber(row.requestsPerSecond, 1),
    },
    {
      id: "queue",
      header: "Queue time per request",
      numeric: true,
      sortValue: (row) => row.queueTimeMs,
      cell: (row) => formatMs(row.queueTimeMs),
    },
    {
      id: "cpu",
      header: "Busy worker cores",
      numeric: true,
      sortValue: (row) => row.busyCores,
      cell: (row) => (row.busyCores === null ? "—" : formatNumber(row.busyCores, 2)),
    },
  ];
  return (
    <section className="card" aria-labelledby="scheduler-replicas-title">
      <h2 id="scheduler-replicas-title">Gateway replicas</h2>
      {replicas === null ? (
        <p className="muted small">No count decided yet: the scheduler decides one from its second period on.</p>
      ) : (
        <>
          <p>
            Desired gateways: <strong data-testid="desired-gateway-replicas">{replicas.desired}</strong> (between{" "}
            {replicas.minGateways} and {replicas.maxGateways}; changed {formatDateTime(replicas.changedAt)})
          </p>
          <p className="muted small">{replicas.reason}</p>
        </>
      )}
      {cluster === null ? null : (
        <>
          <DataTable
            label="The scheduler's inputs per gateway"
            columns={columns}
            rows={cluster.gateways}
            rowKey={(row) => row.gatewayHost ?? ""}
            initialSort={{ column: "gateway" }}
          />
          <p className="small">
            Summed over {cluster.gateways.length} gateway{cluster.gateways.length === 1 ? "" : "s"}:{" "}
            {formatNumber(cluster.summed.requestsPerSecond, 1)} req/s, queue time {formatMs(cluster.summed.queueTimeMs)}{" "}
            per request (weighted by requests),{" "}
            {cluster.summed.busyCores === null
              ? "CPU unknown"
              : `${formatNumber(cluster.summed.busyCores, 2)} busy cores`}
            . Instance counts are per gateway, sized for each model's busiest gateway.
          </p>
        </>
      )}
    </section>
  );
}

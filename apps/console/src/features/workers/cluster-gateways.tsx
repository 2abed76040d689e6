import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import type { RouterOutputs } from "@/lib/api-types";
import { formatDateTime } from "@/lib/format";
import { formatBytes } from "@/lib/number-format";

type ClusterGateway = RouterOutputs["workers"]["list"]["gateways"][number];

// The models' state badge colours (globals.css): ready green, not ready amber, unreachable red.
const STATES = {
  ready: { label: "Ready", badge: "state-ready" },
  "not-ready": { label: "Not ready", badge: "state-loading" },
  unreachable: { label: "Unreachable", badge: "state-unavailable" },
} as const;

/** The gateway's readiness as it answered the control plane, and its reason when it gave one. */
function GatewayState({ readiness }: { readiness: ClusterGateway["readiness"] }) {
  const state = STATES[readiness.state];
  return (
    <>
      <span className={`badge state-badge ${state.badge}`}>{state.label}</span>
      {readiness.detail !== null ? <div className="muted small">{readiness.detail}</div> : null}
    </>
  );
}

/**
 * The gateways started beside this control plane (`operon serve --role gateway`), as the database's
 * session list shows them: one that stops or dies leaves the list within a refresh. State is each one's
 * readiness endpoint as the control plane reached it (ready, not ready, unreachable, with the reason);
 * instances and their memory as its workers endpoint answered ("—" when it could not be asked).
 */
export function ClusterGateways({ gateways }: { gateways: ClusterGateway[] }) {
  const columns: DataColumn<ClusterGateway>[] = [
    { id: "host", header: "Host", sortValue: (g) => g.host, cell: (g) => g.host },
    {
      id: "state",
      header: "State",
      sortValue: (g) => `${g.readiness.state} ${g.readiness.detail ?? ""}`,
      cell: (g) => <GatewayState readiness={g.readiness} />,
    },
    { id: "address", header: "Address", sortValue: (g) => g.address ?? "", cell: (g) => g.address ?? "local socket" },
    { id: "port", header: "HTTP port", numeric: true, sortValue: (g) => g.httpPort, cell: (g) => g.httpPort },
    {
      id: "instances",
      header: "Model instances",
      numeric: true,
      sortValue: (g) => g.instances?.instances ?? -1,
      cell: (g) => (g.instances === null ? "—" : g.instances.instances),
    },
    {
      id: "memory",
      header: "Instance memory",
      numeric: true,
      sortValue: (g) => g.instances?.rssBytes ?? -1,
      cell: (g) => formatBytes(g.instances?.rssBytes),
    },
    {
      id: "since",
      header: "Connected since",
      sortValue: (g) => new Date(g.since).getTime(),
      cell: (g) => formatDateTime(g.since),
    },
  ];
  return (
    <DataTable
      label="Cluster gateways"
      columns={columns}
      rows={gateways}
      rowKey={(g) => `${g.host} ${g.address ?? ""} ${g.httpPort}`}
      initialSort={{ column: "host" }}
    />
  );
}

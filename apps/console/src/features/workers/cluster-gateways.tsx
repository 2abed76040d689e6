import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import type { RouterOutputs } from "@/lib/api-types";
import { formatDateTime } from "@/lib/format";

type ClusterGateway = RouterOutputs["workers"]["list"]["gateways"][number];

/**
 * The gateways started beside this control plane (`operon serve --role gateway`), as the database's
 * session list shows them: one that stops or dies leaves the list within a refresh.
 */
export function ClusterGateways({ gateways }: { gateways: ClusterGateway[] }) {
  const columns: DataColumn<ClusterGateway>[] = [
    { id: "host", header: "Host", sortValue: (g) => g.host, cell: (g) => g.host },
    { id: "address", header: "Address", sortValue: (g) => g.address ?? "", cell: (g) => g.address ?? "local socket" },
    { id: "port", header: "HTTP port", numeric: true, sortValue: (g) => g.httpPort, cell: (g) => g.httpPort },
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

import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import { formatBytes, formatInteger, formatLatencyUs, formatNumber, formatPercent } from "@/lib/number-format";
import type { CurrentModel } from "./overview-types";

const COLUMNS: DataColumn<CurrentModel>[] = [
  {
    id: "model",
    header: "Model",
    rowHeader: true,
    sortValue: (entry) => entry.model,
    cell: (entry) => (
      <>
        <TruncatedText text={entry.model} />
        {entry.isOperator ? <span className="badge badge-quiet">operator</span> : null}
      </>
    ),
  },
  { id: "version", header: "Version", sortValue: (entry) => entry.version, cell: (entry) => entry.version },
  {
    id: "requests",
    header: "Requests",
    numeric: true,
    sortValue: (entry) => entry.requests,
    cell: (entry) => formatInteger(entry.requests),
  },
  {
    id: "errors",
    header: "Errors",
    numeric: true,
    sortValue: (entry) => entry.errors,
    cell: (entry) => formatInteger(entry.errors),
  },
  {
    id: "rate",
    header: "Req/s",
    numeric: true,
    sortValue: (entry) => entry.lastSample?.requestsPerSec,
    cell: (entry) => (entry.lastSample ? formatNumber(entry.lastSample.requestsPerSec) : "—"),
  },
  {
    id: "p50",
    header: "p50",
    numeric: true,
    sortValue: (entry) => entry.latencyUs.p50,
    cell: (entry) => formatLatencyUs(entry.latencyUs.p50),
  },
  {
    id: "p99",
    header: "p99",
    numeric: true,
    sortValue: (entry) => entry.latencyUs.p99,
    cell: (entry) => formatLatencyUs(entry.latencyUs.p99),
  },
  {
    id: "instances",
    header: "Instances",
    numeric: true,
    sortValue: (entry) => entry.instances,
    cell: (entry) => (entry.instances === null ? "—" : `${entry.readyInstances ?? 0}/${entry.instances}`),
  },
  {
    id: "cpu",
    header: "CPU",
    numeric: true,
    sortValue: (entry) => entry.lastSample?.cpuUtilization,
    cell: (entry) => formatPercent(entry.lastSample?.cpuUtilization),
  },
  {
    id: "memory",
    header: "Memory",
    numeric: true,
    sortValue: (entry) => entry.memoryBytes,
    cell: (entry) =>
      entry.memoryBytes === null && (entry.threadInstances ?? 0) > 0 ? (
        <span title="Its instances run on gateway threads: their memory is in the gateway's (the Memory tile)">
          in gateway
        </span>
      ) : (
        formatBytes(entry.memoryBytes)
      ),
  },
];

/** Per model version: the gateway's live counters and latency summary, the workers, the last sample's rate. */
export function LiveModelsTable({ models }: { models: readonly CurrentModel[] }) {
  return (
    <DataTable
      label="Live numbers per model version"
      columns={COLUMNS}
      rows={models}
      rowKey={(entry) => `${entry.model}/${entry.version}`}
      initialSort={{ column: "model" }}
      empty={{ title: "No model is loaded" }}
    />
  );
}

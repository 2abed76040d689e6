import { formatBytes } from "@/lib/number-format";
import { shortHash } from "@/lib/format";
import { formatDateTime } from "@/lib/format";
import { ModelStateBadge } from "../model-state-badge";
import type { ModelVersion } from "./model-detail-types";
import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";
import Link from "next/link";
import { reportHref, statusLabel, type PerfVersionEntry } from "../../perf/perf-types";

/** `perf`: perf.versions (each version's latest report and its comparison with the previous version's), while it loads undefined. */
export function ModelVersionsTable({
  versions,
  perf,
}: {
  versions: readonly ModelVersion[];
  perf?: readonly PerfVersionEntry[] | undefined;
}) {
  const perfByVersion = new Map((perf ?? []).map((entry) => [entry.version, entry]));
  if (versions.length === 0) return <p className="muted">The gateway lists no versions of this model.</p>;
  const columns: DataColumn<ModelVersion>[] = [
    {
      id: "version",
      header: "Version",
      rowHeader: true,
      numeric: true,
      sortValue: (version) => version.version,
      cell: (version) => version.version,
    },
    {
      id: "state",
      header: "State",
      sortValue: (version) => version.state,
      cell: (version) => <ModelStateBadge state={version.state} reason={version.reason} />,
    },
    {
      id: "size",
      header: "Size",
      numeric: true,
      sortValue: (version) => version.sizeBytes,
      cell: (version) => formatBytes(version.sizeBytes),
    },
    {
      id: "sha256",
      header: "SHA-256",
      cell: (version) => (version.sha256 ? <code title={version.sha256}>{shortHash(version.sha256)}</code> : "—"),
    },
    {
      id: "uploadedBy",
      header: "Uploaded by",
      sortValue: (version) => version.uploadedBy,
      cell: (version) => (version.uploadedBy ? <TruncatedText text={version.uploadedBy} size="short" /> : "—"),
    },
    {
      id: "date",
      header: "Date",
      nowrap: true,
      sortValue: (version) => (version.createdAt ? new Date(version.createdAt).getTime() : null),
      cell: (version) => formatDateTime(version.createdAt),
    },
    {
      id: "perf",
      header: "Perf vs previous version",
      cell: (version) => <VersionPerfCell entry={perfByVersion.get(String(version.version))} />,
    },
  ];
  return (
    <DataTable
      label="Versions"
      columns={columns}
      rows={versions}
      rowKey={(version) => String(version.version)}
      initialSort={{ column: "version" }}
    />
  );
}

function VersionPerfCell({ entry }: { entry: PerfVersionEntry | undefined }) {
  if (entry === undefined || entry.latest === null) return <span className="muted">no report</span>;
  if (entry.comparison !== null) {
    const delta = entry.comparison.throughputDeltaPercent;
    return (
      <Link
        href={reportHref(entry.latest.id)}
        className={
          delta <= -1 ? "perf-delta perf-delta-worse" : delta >= 1 ? "perf-delta perf-delta-better" : "perf-delta"
        }
      >
        {entry.comparison.text}
      </Link>
    );
  }
  return <Link href={reportHref(entry.latest.id)}>{statusLabel(entry.latest.status).toLowerCase()}</Link>;
}

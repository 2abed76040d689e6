import { formatBytes } from "@/lib/number-format";
import { shortHash } from "@/lib/format";
import { formatDateTime } from "@/lib/format";
import { ModelStateBadge } from "../model-state-badge";
import type { ModelVersion } from "./model-detail-types";
import { TableScroller } from "@/components/table-scroller";
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
  return (
    <TableScroller label="Versions">
      <table>
        <caption className="visually-hidden">Versions</caption>
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">State</th>
            <th scope="col">Size</th>
            <th scope="col">SHA-256</th>
            <th scope="col">Uploaded by</th>
            <th scope="col">Date</th>
            <th scope="col">Perf vs previous version</th>
          </tr>
        </thead>
        <tbody>
          {versions.map((version) => (
            <tr key={version.version}>
              <th scope="row">{version.version}</th>
              <td>
                <ModelStateBadge state={version.state} reason={version.reason} />
              </td>
              <td className="cell-nowrap">{formatBytes(version.sizeBytes)}</td>
              <td>{version.sha256 ? <code title={version.sha256}>{shortHash(version.sha256)}</code> : "—"}</td>
              <td>{version.uploadedBy ?? "—"}</td>
              <td className="cell-nowrap">{formatDateTime(version.createdAt)}</td>
              <td>
                <VersionPerfCell entry={perfByVersion.get(String(version.version))} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
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

import { formatBytes } from "@/lib/number-format";
import { shortHash } from "@/lib/format";
import { formatDateTime } from "@/lib/format";
import { ModelStateBadge } from "../model-state-badge";
import type { ModelVersion } from "./model-detail-types";
import { TableScroller } from "@/components/table-scroller";

export function ModelVersionsTable({ versions }: { versions: readonly ModelVersion[] }) {
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
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

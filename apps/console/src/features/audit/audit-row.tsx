"use client";

import { useId, useState } from "react";
import type { RouterOutputs } from "@/lib/api-types";
import { formatDateTime } from "@/lib/format";
import { AuditSnapshots } from "./audit-snapshots";

export type AuditEvent = RouterOutputs["audit"]["list"]["events"][number];

const COLUMNS = 6;

/** One event; its before/after snapshots open in a full-width row beneath it. */
export function AuditRow({ event }: { event: AuditEvent }) {
  const [open, setOpen] = useState(false);
  const detailsId = useId();
  const hasSnapshots = event.before != null || event.after != null;
  const snapshotLabel = event.before != null && event.after != null ? "before / after" : event.before != null ? "before" : "after";
  return (
    <>
      <tr>
        <th scope="row">
          <time dateTime={String(event.at)}>{formatDateTime(event.at)}</time>
        </th>
        <td>
          <code>{event.action}</code>
        </td>
        <td>{event.actorEmail ?? (event.apiKeyId ? `API key ${event.apiKeyId}` : "system")}</td>
        <td>
          {event.targetType}
          {event.targetId ? (
            <>
              {" "}
              <code className="truncate small" title={event.targetId}>
                {event.targetId}
              </code>
            </>
          ) : null}
        </td>
        <td>{event.ip ?? "—"}</td>
        <td className="cell-nowrap">
          {hasSnapshots ? (
            <button type="button" className="button-link" aria-expanded={open} aria-controls={detailsId} onClick={() => setOpen((value) => !value)}>
              {open ? "Hide" : "Show"} {snapshotLabel}
            </button>
          ) : (
            <span className="muted">—</span>
          )}
        </td>
      </tr>
      {hasSnapshots ? (
        <tr id={detailsId} className="row-details" hidden={!open}>
          <td colSpan={COLUMNS}>
            <AuditSnapshots before={event.before} after={event.after} />
          </td>
        </tr>
      ) : null}
    </>
  );
}

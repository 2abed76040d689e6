"use client";

import { useId, useState } from "react";
import type { RouterOutputs } from "@/lib/api-types";
import Link from "next/link";
import { formatDateTime } from "@/lib/format";
import { AuditSnapshots } from "./audit-snapshots";
import { BreakableText } from "@/components/breakable-text";

export type AuditEvent = RouterOutputs["audit"]["list"]["events"][number];

const COLUMNS = 6;

/** One event; its before/after snapshots open in a full-width row beneath it. */
export function AuditRow({ event }: { event: AuditEvent }) {
  const [open, setOpen] = useState(false);
  const detailsId = useId();
  const hasSnapshots = event.before != null || event.after != null;
  const snapshotLabel =
    event.before != null && event.after != null ? "before / after" : event.before != null ? "before" : "after";
  return (
    <>
      <tr>
        <th scope="row">
          <time dateTime={String(event.at)}>{formatDateTime(event.at)}</time>
        </th>
        <td>
          <code>{event.action}</code>
        </td>
        <td>
          {event.actorEmail ? (
            <BreakableText text={event.actorEmail} />
          ) : event.apiKeyId ? (
            `API key ${event.apiKeyId}`
          ) : (
            "system"
          )}
        </td>
        <td>
          {event.targetType}
          {event.targetId ? (
            <>
              {" "}
              <AuditTarget type={event.targetType} id={event.targetId} name={event.targetName} />
            </>
          ) : null}
        </td>
        <td>{event.ip ?? "—"}</td>
        <td className="cell-nowrap">
          {hasSnapshots ? (
            <button
              type="button"
              className="button-link"
              aria-expanded={open}
              aria-controls={detailsId}
              onClick={() => setOpen((value) => !value)}
            >
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

/** Where the console shows an audit target (by its name or id); undefined when no page does. */
export function auditTargetHref(type: string, id: string, name: string | null): string | undefined {
  switch (type) {
    case "ApiKey":
      return "/api-keys";
    case "User":
      return "/users";
    case "HardwareProfile":
      return "/hardware";
    case "PerfReport":
      return `/perf/${encodeURIComponent(id)}`;
    case "Model":
      return name ? `/models/${encodeURIComponent(name)}` : undefined;
    case "Operator":
      return name ? `/operators/${encodeURIComponent(name)}` : undefined;
    default:
      return undefined;
  }
}

/** The target by name, linked to its page; the id stays in the tooltip. Without a name, the id. */
function AuditTarget({ type, id, name }: { type: string; id: string; name: string | null }) {
  const href = auditTargetHref(type, id, name);
  if (name === null) {
    return (
      <code className="truncate small" title={id}>
        {id}
      </code>
    );
  }
  return href ? (
    <Link href={href} title={`${type} ${id}`}>
      {name}
    </Link>
  ) : (
    <span title={`${type} ${id}`}>{name}</span>
  );
}

"use client";

import type { RouterOutputs } from "@/lib/api-types";
import Link from "next/link";
import { formatDateTime } from "@/lib/format";
import { AuditSnapshots } from "./audit-snapshots";
import type { DataColumn } from "@/components/data-table/data-table";
import { TruncatedText } from "@/components/data-table/truncated-text";

export type AuditEvent = RouterOutputs["audit"]["list"]["events"][number];

const at = (event: AuditEvent) => new Date(event.at).getTime();

function who(event: AuditEvent): string {
  return event.actorEmail ?? (event.apiKeyId ? `API key ${event.apiKeyId}` : "system");
}

function hasSnapshots(event: AuditEvent): boolean {
  return event.before != null || event.after != null;
}

/** The audit log's columns; an event's before/after snapshots open in the row beneath it. */
export const AUDIT_COLUMNS: DataColumn<AuditEvent>[] = [
  {
    id: "when",
    header: "When",
    rowHeader: true,
    nowrap: true,
    sortValue: at,
    cell: (event) => <time dateTime={String(event.at)}>{formatDateTime(event.at)}</time>,
  },
  {
    id: "action",
    header: "Action",
    sortValue: (event) => event.action,
    cell: (event) => <code>{event.action}</code>,
  },
  {
    id: "who",
    header: "Who",
    sortValue: who,
    cell: (event) => <TruncatedText text={who(event)} size="short" />,
  },
  {
    id: "target",
    header: "Target",
    sortValue: (event) => `${event.targetType} ${event.targetName ?? event.targetId ?? ""}`,
    cell: (event) => (
      <>
        {event.targetType}
        {event.targetId ? (
          <>
            {" "}
            <AuditTarget type={event.targetType} id={event.targetId} name={event.targetName} />
          </>
        ) : null}
      </>
    ),
  },
  { id: "address", header: "Address", sortValue: (event) => event.ip, cell: (event) => event.ip ?? "—" },
  {
    id: "change",
    header: "Change",
    nowrap: true,
    cell: (event, row) => {
      if (!hasSnapshots(event)) return <span className="muted">—</span>;
      const label =
        event.before != null && event.after != null ? "before / after" : event.before != null ? "before" : "after";
      return (
        <button
          type="button"
          className="button-link"
          aria-expanded={row.detailsOpen}
          aria-controls={row.detailsId}
          onClick={row.toggleDetails}
        >
          {row.detailsOpen ? "Hide" : "Show"} {label}
        </button>
      );
    },
  },
];

export function auditDetails(event: AuditEvent) {
  return hasSnapshots(event) ? <AuditSnapshots before={event.before} after={event.after} /> : null;
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
    <Link href={href} title={`${type} ${id}: ${name}`} className="truncated truncated-short">
      {name}
    </Link>
  ) : (
    <span title={`${type} ${id}: ${name}`} className="truncated truncated-short">
      {name}
    </span>
  );
}

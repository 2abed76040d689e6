import { DataTable } from "@/components/data-table/data-table";
import { AUDIT_COLUMNS, auditDetails, type AuditEvent } from "./audit-row";

/** The audit log's page of events, newest first (the pager pages on the server; sorting reorders this page). */
export function AuditTable({ events }: { events: readonly AuditEvent[] }) {
  return (
    <DataTable
      label="Audit events"
      caption="Audit events, newest first"
      columns={AUDIT_COLUMNS}
      rows={events}
      rowKey={(event) => event.id}
      details={auditDetails}
      empty={{ title: "No events match" }}
    />
  );
}

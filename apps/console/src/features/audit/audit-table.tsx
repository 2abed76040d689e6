import { AuditRow, type AuditEvent } from "./audit-row";
import { TableScroller } from "@/components/table-scroller";

export function AuditTable({ events }: { events: readonly AuditEvent[] }) {
  return (
    <TableScroller label="Audit events">
      <table>
        <caption className="visually-hidden">Audit events, newest first</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Action</th>
            <th scope="col">Who</th>
            <th scope="col">Target</th>
            <th scope="col">Address</th>
            <th scope="col">Change</th>
          </tr>
        </thead>
        <tbody>
          {events.map((event) => (
            <AuditRow key={event.id} event={event} />
          ))}
        </tbody>
      </table>
    </TableScroller>
  );
}

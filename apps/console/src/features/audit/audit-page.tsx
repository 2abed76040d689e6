"use client";

import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { PageHeader } from "@/components/page-header";
import { RequireRole } from "@/components/shell/require-role";
import { QueryView } from "@/components/states/query-view";
import { useTRPC } from "@/lib/trpc";
import { auditListInput, NO_AUDIT_FILTERS, type AuditFilters } from "./audit-filters";
import { AuditFiltersForm } from "./audit-filters-form";
import { AuditPager } from "./audit-pager";
import { AuditTable } from "./audit-table";

export function AuditPage() {
  return (
    <>
      <PageHeader title="Audit">
        <p>Every change anyone made, newest first.</p>
      </PageHeader>
      <RequireRole role="ADMIN">
        <AuditSection />
      </RequireRole>
    </>
  );
}

function AuditSection() {
  const trpc = useTRPC();
  const [filters, setFilters] = useState<AuditFilters>(NO_AUDIT_FILTERS);
  // cursors[i] starts page i+1; the first page has none.
  const [cursors, setCursors] = useState<Array<string | undefined>>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const events = useQuery({
    ...trpc.audit.list.queryOptions(auditListInput(filters, cursor)),
    placeholderData: keepPreviousData,
  });
  const filtered = Object.values(filters).some((value) => value !== "");

  return (
    <>
      <section className="card">
        <AuditFiltersForm
          filters={filters}
          onApply={(next) => {
            setFilters(next);
            setCursors([undefined]);
          }}
        />
      </section>
      <section className="card" aria-labelledby="events-title" aria-busy={events.isFetching}>
        <h2 id="events-title">Events</h2>
        <QueryView
          query={events}
          loadingLabel="Loading events…"
          isEmpty={(page) => page.events.length === 0 && cursors.length === 1}
          empty={{ title: filtered ? "No events match these filters" : "No events yet" }}
        >
          {(page) => (
            <>
              {page.events.length > 0 ? <AuditTable events={page.events} /> : <p className="muted">No older events.</p>}
              <AuditPager
                page={cursors.length}
                hasOlder={page.nextCursor !== null}
                busy={events.isFetching}
                onNewer={() => setCursors((list) => (list.length > 1 ? list.slice(0, -1) : list))}
                onOlder={() => page.nextCursor && setCursors((list) => [...list, page.nextCursor ?? undefined])}
              />
            </>
          )}
        </QueryView>
      </section>
    </>
  );
}

"use client";

import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { PageHeader } from "@/components/page-header";
import { RequireRole } from "@/components/shell/require-role";
import { QueryView } from "@/components/states/query-view";
import { useTRPC } from "@/lib/trpc";
import { AssignKeyForm } from "./assign-key-form";
import { TenantForm } from "./tenant-form";
import { TenantsTable } from "./tenants-table";
import { TenantUsageSection } from "./tenant-usage-section";

export function TenantsPage() {
  return (
    <>
      <PageHeader title="Tenants">
        <p>
          Who gets how much of a busy model: shares of capacity per tenant, and each tenant's use against its share.
        </p>
      </PageHeader>
      <RequireRole role="ADMIN">
        <TenantsSection />
        <TenantUsageSection />
      </RequireRole>
    </>
  );
}

/** The rules the gateway applies, said before anyone relies on them. */
function ShareRules() {
  return (
    <ul className="rules">
      <li>
        A tenant is a named group of API keys; a key outside any group counts for its owner (share 1), requests without
        a key for “anonymous” (share 1).
      </li>
      <li>
        Shares are weights of each busy model's capacity in normalized units: a request counts its batch items × the
        model's measured compute time per inference.
      </li>
      <li>
        While a model is busy, a tenant over its share waits (Queue) or gets 429 with Retry-After (Refuse). An idle
        model serves anyone.
      </li>
      <li>Shares apply while at least one tenant group exists; delete them all to turn traffic shares off.</li>
    </ul>
  );
}

function TenantsSection() {
  const trpc = useTRPC();
  const tenants = useQuery(trpc.tenants.list.queryOptions());
  /** "new", a tenant id, or null. */
  const [editing, setEditing] = useState<string | null>(null);
  const edited = editing && editing !== "new" ? tenants.data?.find((tenant) => tenant.id === editing) : undefined;
  return (
    <>
      <section className="card" aria-labelledby="tenants-title">
        <div className="section-header">
          <h2 id="tenants-title">Tenants and shares</h2>
          {editing === null ? (
            <button type="button" className="button button-primary" onClick={() => setEditing("new")}>
              Add tenant
            </button>
          ) : null}
        </div>
        <ShareRules />
        {editing !== null && (editing === "new" || edited) ? (
          <div className="subcard">
            <TenantForm key={editing} {...(edited ? { tenant: edited } : {})} onDone={() => setEditing(null)} />
          </div>
        ) : null}
        <QueryView
          query={tenants}
          loadingLabel="Loading tenants…"
          isEmpty={(list) => list.length === 0}
          empty={{ title: "No tenants" }}
        >
          {(list) => <TenantsTable tenants={list} onEdit={setEditing} />}
        </QueryView>
      </section>
      <section className="card" aria-labelledby="assign-title">
        <h2 id="assign-title">Assign a key</h2>
        <QueryView query={tenants} loadingLabel="Loading tenants…">
          {(list) => <AssignKeyForm tenants={list} />}
        </QueryView>
      </section>
    </>
  );
}

"use client";

import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { PageHeader } from "@/components/page-header";
import { RequireRole } from "@/components/shell/require-role";
import { useSignedInUser } from "@/components/shell/session-context";
import { QueryView } from "@/components/states/query-view";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { ApiKeysTable } from "./api-keys-table";
import { CreateApiKeyForm, type CreatedApiKey } from "./create-api-key-form";
import { NewApiKeyNotice } from "./new-api-key-notice";

export function ApiKeysPage() {
  return (
    <>
      <PageHeader title="API keys">
        <p>Keys let programs call the inference gateway (HTTP and gRPC) as you.</p>
      </PageHeader>
      <RequireRole role="ENGINEER">
        <ApiKeysSection />
      </RequireRole>
    </>
  );
}

function ApiKeysSection() {
  const trpc = useTRPC();
  const user = useSignedInUser();
  const isAdmin = hasRole(user.role, "ADMIN");
  const [all, setAll] = useState(false);
  const [includeRevoked, setIncludeRevoked] = useState(false);
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const keys = useQuery(trpc.apiKeys.list.queryOptions({ all: isAdmin && all, includeRevoked }));

  return (
    <>
      {created ? <NewApiKeyNotice created={created} onDone={() => setCreated(null)} /> : null}
      <section className="card" aria-labelledby="keys-title">
        <div className="section-header">
          <h2 id="keys-title">{all ? "All keys" : "Your keys"}</h2>
          <div className="toggles">
            {isAdmin ? (
              <label className="checkbox">
                <input type="checkbox" checked={all} onChange={(event) => setAll(event.target.checked)} />
                <span>Everyone's keys</span>
              </label>
            ) : null}
            <label className="checkbox">
              <input
                type="checkbox"
                checked={includeRevoked}
                onChange={(event) => setIncludeRevoked(event.target.checked)}
              />
              <span>Show revoked</span>
            </label>
          </div>
        </div>
        <QueryView
          query={keys}
          loadingLabel="Loading keys…"
          isEmpty={(list) => list.length === 0}
          empty={{
            title: all ? "No keys yet" : "You have no keys yet",
            body: <p>Create one below to call the gateway from a program.</p>,
          }}
        >
          {(list) => <ApiKeysTable keys={list} showOwner={all} />}
        </QueryView>
      </section>
      <section className="card">
        <CreateApiKeyForm onCreated={setCreated} />
      </section>
    </>
  );
}

"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { PageHeader } from "@/components/page-header";
import { useSignedInUser } from "@/components/shell/session-context";
import { QueryView } from "@/components/states/query-view";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { OperatorsTable } from "./operators-table";

export function OperatorsPage() {
  const trpc = useTRPC();
  const user = useSignedInUser();
  const canManage = hasRole(user.role, "ENGINEER");
  const operators = useQuery(trpc.operators.list.queryOptions());
  return (
    <>
      <PageHeader title="Operators">
        <p>
          DAGs of model calls the gateway serves like models. Ensembles from the model repository are listed too,
          read-only.
        </p>
      </PageHeader>
      <section className="card" aria-labelledby="operators-title">
        <div className="section-header">
          <h2 id="operators-title">All operators</h2>
          {canManage ? (
            <Link className="button button-primary" href="/operators/new">
              New operator
            </Link>
          ) : null}
        </div>
        <QueryView
          query={operators}
          loadingLabel="Loading operators…"
          isEmpty={(list) => list.length === 0}
          empty={{
            title: "No operators yet",
            body: canManage ? (
              <p>
                <Link href="/operators/new">Create one</Link> from the models the gateway serves.
              </p>
            ) : (
              <p>An engineer can create one from the models the gateway serves.</p>
            ),
          }}
        >
          {(list) => <OperatorsTable operators={list} canManage={canManage} />}
        </QueryView>
      </section>
    </>
  );
}

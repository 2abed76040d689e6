"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { PageHeader } from "@/components/page-header";
import { RequireRole } from "@/components/shell/require-role";
import { EmptyState } from "@/components/states/empty-state";
import { QueryView } from "@/components/states/query-view";
import { useTRPC } from "@/lib/trpc";
import { OperatorEditor } from "./operator-editor";
import { specText } from "./spec-text";

export function EditOperatorPage({ name }: { name: string }) {
  const trpc = useTRPC();
  const operator = useQuery(trpc.operators.get.queryOptions({ name }));
  return (
    <>
      <PageHeader title={`Edit ${name}`}>
        <p>Saving stores the spec as a new version; the gateway serves it at once.</p>
      </PageHeader>
      <RequireRole role="ENGINEER">
        <QueryView query={operator} loadingLabel="Loading the operator…">
          {(detail) =>
            detail.stored ? (
              <section className="card">
                <OperatorEditor
                  mode="update"
                  initial={{
                    name: detail.name,
                    description: detail.description ?? "",
                    specText: specText(detail.spec),
                  }}
                />
              </section>
            ) : (
              <EmptyState title="This operator cannot be edited here">
                <p>
                  It is{" "}
                  {detail.source === "repository"
                    ? "an ensemble of the model repository; change its config.pbtxt"
                    : "registered at the gateway directly"}
                  . <Link href={`/operators/${encodeURIComponent(name)}`}>Back to {name}</Link>
                </p>
              </EmptyState>
            )
          }
        </QueryView>
      </RequireRole>
    </>
  );
}

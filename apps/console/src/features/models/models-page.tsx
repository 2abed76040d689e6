"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { TableSearch, matchesSearch } from "@/components/data-table/table-search";
import { PageHeader } from "@/components/page-header";
import { useSignedInUser } from "@/components/shell/session-context";
import { QueryView } from "@/components/states/query-view";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { isTransient, MODEL_POLL_MS } from "./model-state";
import { backendLabel, ModelsTable, modelSourceLabel } from "./models-table";

export function ModelsPage() {
  const trpc = useTRPC();
  const user = useSignedInUser();
  const canManage = hasRole(user.role, "ENGINEER");
  const [search, setSearch] = useState("");
  const models = useQuery({
    ...trpc.models.list.queryOptions(),
    // Ask again while a model is loading or unloading, until it settles.
    refetchInterval: (query) =>
      query.state.data?.models.some((model) => isTransient(model.state)) ? MODEL_POLL_MS : false,
  });
  return (
    <>
      <PageHeader title="Models">
        <p>Every model the gateway can serve: your uploads and the models of its repository folders.</p>
      </PageHeader>
      <section className="card" aria-labelledby="models-title">
        <div className="section-header">
          <h2 id="models-title">All models</h2>
          {canManage ? (
            <div className="section-actions">
              <Link href="/models/steps" className="button">
                Build from steps
              </Link>
              <Link href="/models/custom-step" className="button">
                Upload custom step
              </Link>
              <Link href="/models/upload" className="button button-primary">
                Upload model
              </Link>
            </div>
          ) : null}
        </div>
        {models.data?.gatewayError ? (
          <p className="notice" role="status">
            The gateway did not answer, so states are unknown: {models.data.gatewayError}
          </p>
        ) : null}
        <QueryView
          query={models}
          loadingLabel="Loading models…"
          isEmpty={(data) => data.models.length === 0}
          empty={{
            title: "No models yet",
            body: canManage ? <p>Upload an ONNX model to serve it.</p> : <p>An engineer can upload one.</p>,
          }}
        >
          {(data) => (
            <>
              <TableSearch label="Search models" value={search} onChange={setSearch} />
              <ModelsTable
                models={data.models.filter((model) =>
                  matchesSearch(search, [
                    model.name,
                    model.description,
                    backendLabel(model),
                    model.platform,
                    modelSourceLabel(model.source),
                  ]),
                )}
                canManage={canManage}
              />
            </>
          )}
        </QueryView>
      </section>
    </>
  );
}

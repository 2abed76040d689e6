"use client";

import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useSignedInUser } from "@/components/shell/session-context";
import { QueryView } from "@/components/states/query-view";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { DatasetForm } from "./dataset-form";
import { DatasetsTable, FirstRowsTable } from "./datasets-table";

/**
 * Datasets: upload a CSV / JSONL / Parquet file (admins also name a folder of images on the server or a
 * PostgreSQL table) with a query over it, list them, preview the first rows.
 */
export function DatasetsSection() {
  const trpc = useTRPC();
  const datasets = useQuery(trpc.datasets.list.queryOptions());
  const [previewId, setPreviewId] = useState<string | null>(null);
  // Admins also have the server's folders and tables (dataset-form.tsx): the empty state names every source they have.
  const isAdmin = hasRole(useSignedInUser().role, "ADMIN");
  return (
    <section className="card" aria-labelledby="datasets-title">
      <div className="section-header">
        <h2 id="datasets-title">Datasets</h2>
      </div>
      <p className="muted">
        A dataset is a DuckDB SELECT over one file, which the query reads as <code>source</code>. Key columns are copied
        beside the outputs into a job&apos;s results.
      </p>
      <DatasetForm />
      <QueryView
        query={datasets}
        loadingLabel="Loading datasets…"
        isEmpty={(list) => list.length === 0}
        empty={{
          title: "No datasets yet",
          body: (
            <p>
              {isAdmin
                ? "Make one above: upload a file, or name a folder of images or a PostgreSQL table on the server."
                : "Upload a file above."}
            </p>
          ),
        }}
      >
        {(list) => (
          <DatasetsTable
            datasets={list}
            previewId={previewId}
            onPreview={(id) => setPreviewId(previewId === id ? null : id)}
          />
        )}
      </QueryView>
      {previewId !== null ? <DatasetPreview id={previewId} /> : null}
    </section>
  );
}

function DatasetPreview({ id }: { id: string }) {
  const trpc = useTRPC();
  const preview = useQuery(trpc.datasets.preview.queryOptions({ id, limit: 10 }));
  return (
    <section className="subcard" aria-label="Dataset preview">
      <QueryView query={preview} loadingLabel="Running the query…">
        {(data) => (
          <>
            <h3>
              {data.name}: {data.preview.rowCount} rows
            </h3>
            <p className="small">
              Schema:{" "}
              {data.preview.columns.map((column) => (
                <span key={column.name} className="badge">
                  {column.name} {column.type}
                </span>
              ))}
            </p>
            <FirstRowsTable preview={data.preview} />
          </>
        )}
      </QueryView>
    </section>
  );
}

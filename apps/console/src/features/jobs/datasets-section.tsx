"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { SubmitButton } from "@/components/form/submit-button";
import { TextField } from "@/components/form/text-field";
import { useFormProblem } from "@/components/form/use-form-problem";
import { QueryView } from "@/components/states/query-view";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { DatasetsTable, FirstRowsTable } from "./datasets-table";

const FIELDS = ["name", "file.fileName", "file.contentBase64", "query", "keyColumns"];
/** The API takes files up to 5 MiB here; larger ones go under --batch-data-root (admins). */
const MAX_UPLOAD_BYTES = 5 * 1024 * 1024;

/** Datasets: upload a CSV / JSONL / Parquet file with a query over it, list them, preview the first rows. */
export function DatasetsSection() {
  const trpc = useTRPC();
  const datasets = useQuery(trpc.datasets.list.queryOptions());
  const [previewId, setPreviewId] = useState<string | null>(null);
  return (
    <section className="card" aria-labelledby="datasets-title">
      <div className="section-header">
        <h2 id="datasets-title">Datasets</h2>
      </div>
      <p className="muted">
        A dataset is a DuckDB SELECT over one file, which the query reads as <code>source</code>. Key columns are copied
        beside the outputs into a job&apos;s results.
      </p>
      <UploadForm />
      <QueryView
        query={datasets}
        loadingLabel="Loading datasets…"
        isEmpty={(list) => list.length === 0}
        empty={{ title: "No datasets yet", body: <p>Upload a file above.</p> }}
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

function UploadForm() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { problem, clear, fromError, atFields } = useFormProblem();
  const [reading, setReading] = useState(false);
  const create = useMutation(
    trpc.datasets.create.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries({ queryKey: trpc.datasets.list.queryKey() });
      },
      onError: fromError,
    }),
  );

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const formElement = event.currentTarget;
    const form = new FormData(formElement);
    const name = String(form.get("name") ?? "").trim();
    const file = form.get("file");
    const query = String(form.get("query") ?? "").trim();
    const keys = String(form.get("keys") ?? "")
      .split(",")
      .map((key) => key.trim())
      .filter(Boolean);
    const errors = [
      ...(name === "" ? [{ path: "name", message: "required" }] : []),
      ...(!(file instanceof File) || file.size === 0 ? [{ path: "file.fileName", message: "choose a file" }] : []),
      ...(file instanceof File && file.size > MAX_UPLOAD_BYTES
        ? [{ path: "file.fileName", message: "at most 5 MiB here; larger files go on the server (admins)" }]
        : []),
    ];
    if (errors.length > 0 || !(file instanceof File)) {
      atFields(errors);
      return;
    }
    setReading(true);
    const contentBase64 = await base64Of(file).finally(() => setReading(false));
    create.mutate(
      {
        name,
        file: { kind: "upload", fileName: file.name, contentBase64 },
        ...(query !== "" ? { query } : {}),
        ...(keys.length > 0 ? { keyColumns: keys } : {}),
      },
      { onSuccess: () => formElement.reset() },
    );
  };

  return (
    <form onSubmit={(event) => void submit(event)} noValidate className="form form-grid" aria-label="Upload a dataset">
      <TextField
        label="Name"
        name="name"
        required
        maxLength={100}
        autoComplete="off"
        error={fieldMessage(problem, "name")}
      />
      <div className="field">
        <label htmlFor="dataset-file">File (.csv, .jsonl, .parquet)</label>
        <input id="dataset-file" name="file" type="file" accept=".csv,.tsv,.jsonl,.ndjson,.json,.parquet" />
        {fieldMessage(problem, "file.fileName") ? (
          <p className="field-error">{fieldMessage(problem, "file.fileName")}</p>
        ) : null}
      </div>
      <TextField
        label="Query (optional)"
        name="query"
        placeholder="SELECT * FROM source"
        autoComplete="off"
        error={fieldMessage(problem, "query")}
      />
      <TextField
        label="Key columns (comma-separated, optional)"
        name="keys"
        autoComplete="off"
        error={fieldMessage(problem, "keyColumns.0")}
      />
      <FormAlert message={formMessage(problem, FIELDS)} />
      <div className="form-actions">
        <SubmitButton pending={create.isPending || reading} label="Upload dataset" pendingLabel="Uploading…" />
      </div>
    </form>
  );
}

async function base64Of(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return btoa(binary);
}

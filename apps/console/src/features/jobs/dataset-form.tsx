"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useId, useState } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { SelectField } from "@/components/form/select-field";
import { SubmitButton } from "@/components/form/submit-button";
import { TextField } from "@/components/form/text-field";
import { useFormProblem } from "@/components/form/use-form-problem";
import { useSignedInUser } from "@/components/shell/session-context";
import { type ApiProblem, fieldMessage, formMessage } from "@/lib/api-problem";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";

/** The API takes files up to 5 MiB here; larger ones go under --batch-data-root (admins). */
const MAX_UPLOAD_BYTES = 5 * 1024 * 1024;

/**
 * Where a dataset's rows come from. Engineers upload a file; admins may also name a folder of images on
 * the server (under --batch-data-root) or a table of a --batch-postgres connection, as the API allows only
 * them (a server's folders and tables are the server's data, not an engineer's upload).
 */
type Source = "upload" | "folder" | "postgres";
const SOURCE_LABELS: Record<Source, string> = {
  upload: "File upload",
  folder: "Folder of images on the server",
  postgres: "PostgreSQL table",
};
/** The API's field paths each source's fields answer for ("file": the source could not be read). */
const SOURCE_FIELDS: Record<Source, readonly string[]> = {
  upload: ["file.fileName", "file.contentBase64", "file"],
  folder: ["file.path", "file"],
  postgres: ["file.connection", "file.table", "file"],
};
const COMMON_FIELDS = ["name", "query", "keyColumns", "keyColumns.0"];

/**
 * The server's own reason at the field it blames: the API's field messages are short ("no such table"),
 * its message says why (DuckDB's or PostgreSQL's words, the folder's limit), so the field shows the message.
 */
function reasonAt(problem: ApiProblem | null, paths: readonly string[]): string | undefined {
  return paths.some((path) => fieldMessage(problem, path) !== undefined) ? problem?.message : undefined;
}

export function DatasetForm() {
  const trpc = useTRPC();
  const user = useSignedInUser();
  const isAdmin = hasRole(user.role, "ADMIN");
  const queryClient = useQueryClient();
  const { problem, clear, fromError, atFields } = useFormProblem();
  const [source, setSource] = useState<Source>("upload");
  const [reading, setReading] = useState(false);
  const radioName = useId();
  // Names of the --batch-postgres connections (never URLs) and the allowed folders: asked for by admins only.
  const sources = useQuery({ ...trpc.datasets.serverSources.queryOptions(), enabled: isAdmin });
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
    const text = (field: string) => String(form.get(field) ?? "").trim();
    const name = text("name");
    const query = text("query");
    const keys = text("keys")
      .split(",")
      .map((key) => key.trim())
      .filter(Boolean);
    const errors = name === "" ? [{ path: "name", message: "required" }] : [];
    let file: { kind: "upload"; fileName: string; contentBase64: string } | { kind: "serverPath"; path: string };
    let table: { kind: "postgres"; connection: string; table: string } | undefined;
    if (source === "folder") {
      if (text("path") === "") errors.push({ path: "file.path", message: "required" });
      file = { kind: "serverPath", path: text("path") };
    } else if (source === "postgres") {
      if (text("connection") === "") errors.push({ path: "file.connection", message: "choose a connection" });
      if (text("table") === "") errors.push({ path: "file.table", message: "required" });
      table = { kind: "postgres", connection: text("connection"), table: text("table") };
      file = { kind: "serverPath", path: "" };
    } else {
      const chosen = form.get("file");
      if (!(chosen instanceof File) || chosen.size === 0)
        errors.push({ path: "file.fileName", message: "choose a file" });
      else if (chosen.size > MAX_UPLOAD_BYTES)
        errors.push({ path: "file.fileName", message: "at most 5 MiB here; larger files go on the server (admins)" });
      if (errors.length > 0 || !(chosen instanceof File)) {
        atFields(errors);
        return;
      }
      setReading(true);
      file = {
        kind: "upload",
        fileName: chosen.name,
        contentBase64: await base64Of(chosen).finally(() => setReading(false)),
      };
    }
    if (errors.length > 0) {
      atFields(errors);
      return;
    }
    create.mutate(
      {
        name,
        file: table ?? file,
        ...(query !== "" ? { query } : {}),
        ...(keys.length > 0 ? { keyColumns: keys } : {}),
      },
      { onSuccess: () => formElement.reset() },
    );
  };

  // A field error the form made itself is its own message; one from the server shows the server's reason.
  const at = (path: string, also: readonly string[] = []) =>
    problem?.appCode === undefined ? fieldMessage(problem, path) : reasonAt(problem, [path, ...also]);
  const connections = sources.data?.postgresConnections ?? [];
  return (
    <form onSubmit={(event) => void submit(event)} noValidate className="form form-grid" aria-label="Add a dataset">
      {isAdmin ? (
        <fieldset className="segmented segmented-small">
          <legend>Source</legend>
          <div className="segmented-options">
            {(Object.keys(SOURCE_LABELS) as Source[]).map((option) => (
              <label key={option} className="segmented-option">
                <input
                  type="radio"
                  name={radioName}
                  value={option}
                  checked={source === option}
                  onChange={() => {
                    clear();
                    setSource(option);
                  }}
                />
                <span>{SOURCE_LABELS[option]}</span>
              </label>
            ))}
          </div>
        </fieldset>
      ) : null}
      <TextField label="Name" name="name" required maxLength={100} autoComplete="off" error={at("name")} />
      {source === "upload" ? (
        <div className="field">
          <label htmlFor="dataset-file">File (.csv, .jsonl, .parquet)</label>
          <input id="dataset-file" name="file" type="file" accept=".csv,.tsv,.jsonl,.ndjson,.json,.parquet" />
          {at("file.fileName", ["file.contentBase64", "file"]) ? (
            <p className="field-error">{at("file.fileName", ["file.contentBase64", "file"])}</p>
          ) : null}
        </div>
      ) : null}
      {source === "folder" ? (
        <TextField
          label="Folder on the server"
          name="path"
          required
          autoComplete="off"
          hint={
            sources.data && sources.data.dataRoots.length > 0
              ? `one row per image file, under ${sources.data.dataRoots.join(" or ")}`
              : "one row per image file, under a folder operon serve --batch-data-root allows"
          }
          error={at("file.path", ["file"])}
        />
      ) : null}
      {source === "postgres" ? (
        <>
          <SelectField
            label="Connection"
            name="connection"
            options={[
              {
                value: "",
                label: connections.length > 0 ? "Choose a connection" : "None (operon serve --batch-postgres)",
              },
              ...connections.map((connection) => ({ value: connection, label: connection })),
            ]}
            error={at("file.connection")}
          />
          <TextField
            label="Table (table or schema.table)"
            name="table"
            required
            autoComplete="off"
            error={at("file.table", ["file"])}
          />
        </>
      ) : null}
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
      <FormAlert message={formMessage(problem, [...COMMON_FIELDS, ...SOURCE_FIELDS[source]])} />
      <div className="form-actions">
        <SubmitButton
          pending={create.isPending || reading}
          label={source === "upload" ? "Upload dataset" : "Add dataset"}
          pendingLabel={source === "upload" ? "Uploading…" : "Reading…"}
        />
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

"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { SelectField } from "@/components/form/select-field";
import { SubmitButton } from "@/components/form/submit-button";
import { TextField } from "@/components/form/text-field";
import { useFormProblem } from "@/components/form/use-form-problem";
import { QueryView } from "@/components/states/query-view";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { parseMappingLines, parseRowsPerRequest } from "./job-format";
import { JobThroughputSection } from "./job-throughput-section";
import { FailedRowsTable, JobsTable } from "./jobs-table";

const REFRESH_MS = 1_000;
const FIELDS = ["datasetId", "target.kind", "target.name", "mapping", "outputs", "rowsPerRequest"];

/**
 * Jobs: start one, follow its progress (rows/s, time left), pause, resume, cancel, retry failed rows, download
 * results; one job's throughput beside online traffic, and its cost.
 */
export function JobsSection() {
  const trpc = useTRPC();
  const jobs = useQuery({ ...trpc.jobs.list.queryOptions(), refetchInterval: REFRESH_MS, staleTime: 0 });
  const [failuresOf, setFailuresOf] = useState<string | null>(null);
  return (
    <section className="card" aria-labelledby="jobs-title">
      <div className="section-header">
        <h2 id="jobs-title">Jobs</h2>
      </div>
      <p className="muted">
        A job runs one model or operator over a dataset&apos;s rows at the lowest priority, under a tenant of its own:
        it adapts how many requests it has in flight so that online traffic keeps its latency, and fills the capacity
        online traffic leaves. It checkpoints every chunk of rows, so a restart resumes where it stopped.
      </p>
      <StartJobForm />
      <QueryView
        query={jobs}
        loadingLabel="Loading jobs…"
        isEmpty={(list) => list.length === 0}
        empty={{ title: "No jobs yet", body: <p>Start one above, or with operon job run.</p> }}
      >
        {(list) => (
          <>
            <JobsTable jobs={list} onFailures={(id) => setFailuresOf(failuresOf === id ? null : id)} />
            <JobThroughputSection jobs={list} />
          </>
        )}
      </QueryView>
      {failuresOf !== null ? <FailuresPanel id={failuresOf} /> : null}
    </section>
  );
}

function FailuresPanel({ id }: { id: string }) {
  const trpc = useTRPC();
  const failures = useQuery(trpc.jobs.failures.queryOptions({ id, take: 100 }));
  return (
    <section className="subcard" aria-label="Failed rows">
      <h3>Failed rows</h3>
      <QueryView query={failures} loadingLabel="Loading failed rows…">
        {(list) => <FailedRowsTable failures={list} />}
      </QueryView>
    </section>
  );
}

function StartJobForm() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const datasets = useQuery(trpc.datasets.list.queryOptions());
  const { problem, clear, fromError, atFields } = useFormProblem();
  const create = useMutation(
    trpc.jobs.create.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries({ queryKey: trpc.jobs.list.queryKey() });
      },
      onError: fromError,
    }),
  );
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const form = new FormData(event.currentTarget);
    const datasetId = String(form.get("datasetId") ?? "");
    const kind = String(form.get("kind")) === "OPERATOR" ? ("OPERATOR" as const) : ("MODEL" as const);
    const name = String(form.get("target") ?? "").trim();
    const parsed = parseMappingLines(String(form.get("mapping") ?? ""));
    // The range's top is the model's max_batch_size: the API checks it against the model served and names it.
    const rows = parseRowsPerRequest(String(form.get("rowsPerRequest") ?? ""));
    const errors = [
      ...(datasetId === "" ? [{ path: "datasetId", message: "upload a dataset first" }] : []),
      ...(name === "" ? [{ path: "target.name", message: "required" }] : []),
      ...(parsed.problem !== undefined ? [{ path: "mapping", message: parsed.problem }] : []),
      ...(rows.problem !== undefined ? [{ path: "rowsPerRequest", message: rows.problem }] : []),
    ];
    if (errors.length > 0) {
      atFields(errors);
      return;
    }
    create.mutate({
      datasetId,
      target: { kind, name },
      ...(parsed.mapping.length > 0 ? { mapping: parsed.mapping } : {}),
      ...(rows.value !== undefined ? { rowsPerRequest: rows.value } : {}),
    });
  };
  const options = (datasets.data ?? []).map((dataset) => ({ value: dataset.id, label: dataset.name }));
  return (
    <form onSubmit={submit} noValidate className="form form-grid" aria-label="Start a job">
      <SelectField
        label="Dataset"
        name="datasetId"
        options={options.length > 0 ? options : [{ value: "", label: "no dataset yet" }]}
        error={fieldMessage(problem, "datasetId")}
      />
      <SelectField
        label="Runs"
        name="kind"
        options={[
          { value: "MODEL", label: "a model" },
          { value: "OPERATOR", label: "an operator" },
        ]}
        error={fieldMessage(problem, "target.kind")}
      />
      <TextField
        label="Model or operator name"
        name="target"
        required
        autoComplete="off"
        error={fieldMessage(problem, "target.name")}
      />
      <div className="field">
        <label htmlFor="job-mapping">Column mapping (one a line; empty: suggested)</label>
        <textarea id="job-mapping" name="mapping" rows={2} placeholder={"X=a,b\nTEXT=text:review"} />
        {fieldMessage(problem, "mapping") ? <p className="field-error">{fieldMessage(problem, "mapping")}</p> : null}
      </div>
      <TextField
        label="Rows per request (optional)"
        name="rowsPerRequest"
        inputMode="numeric"
        autoComplete="off"
        placeholder="server default"
        hint="1 to the model's max_batch_size; empty: the server's default (half the batch)"
        error={fieldMessage(problem, "rowsPerRequest")}
      />
      <FormAlert message={formMessage(problem, FIELDS)} />
      <div className="form-actions">
        <SubmitButton pending={create.isPending} label="Start job" pendingLabel="Checking the mapping…" />
      </div>
    </form>
  );
}

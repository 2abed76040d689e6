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
import type { RouterOutputs } from "@/lib/api-types";
import { useTRPC } from "@/lib/trpc";
import { parseMappingLines, timeLeft } from "./job-format";

type Job = RouterOutputs["jobs"]["list"][number];
const REFRESH_MS = 1_000;
const FIELDS = ["datasetId", "target.kind", "target.name", "mapping", "outputs"];

/** Jobs: start one, follow its progress (rows/s, time left), pause, resume, cancel, retry failed rows, download results. */
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
          <div className="table-wrap">
            <table aria-label="Jobs">
              <thead>
                <tr>
                  <th scope="col">Target</th>
                  <th scope="col">Dataset</th>
                  <th scope="col">Owner</th>
                  <th scope="col">State</th>
                  <th scope="col">Progress</th>
                  <th scope="col">Failed rows</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.map((job) => (
                  <JobRow
                    key={job.id}
                    job={job}
                    onFailures={() => setFailuresOf(failuresOf === job.id ? null : job.id)}
                  />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </QueryView>
      {failuresOf !== null ? <FailuresPanel id={failuresOf} /> : null}
    </section>
  );
}

function JobRow({ job, onFailures }: { job: Job; onFailures: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [problem, setProblem] = useState<string | null>(null);
  const options = {
    onSuccess: async () => {
      setProblem(null);
      await queryClient.invalidateQueries({ queryKey: trpc.jobs.list.queryKey() });
    },
    onError: (error: { message: string }) => setProblem(error.message),
  };
  const pause = useMutation(trpc.jobs.pause.mutationOptions(options));
  const resume = useMutation(trpc.jobs.resume.mutationOptions(options));
  const cancel = useMutation(trpc.jobs.cancel.mutationOptions(options));
  const retry = useMutation(trpc.jobs.retryFailed.mutationOptions(options));
  const total = job.totalRows ?? 0;
  const percent = total > 0 ? Math.floor((100 * job.doneRows) / total) : 0;
  const label = `${job.target.kind === "OPERATOR" ? "operator" : "model"} ${job.target.name}`;
  return (
    <tr aria-label={`job ${label} on ${job.datasetName}`}>
      <td>
        {label}
        <div className="muted small">{job.id.slice(0, 8)}</div>
      </td>
      <td>{job.datasetName}</td>
      <td>{job.ownerEmail ?? "–"}</td>
      <td>
        <span className="badge">{job.state.toLowerCase()}</span>
        {job.error ? <div className="field-error small">{job.error}</div> : null}
        {problem ? (
          <div className="field-error small" role="alert">
            {problem}
          </div>
        ) : null}
      </td>
      <td>
        <progress max={total || 1} value={job.doneRows} aria-label={`progress of ${label}`} />
        <div className="small">
          {job.doneRows.toLocaleString("en")} / {job.totalRows === null ? "?" : total.toLocaleString("en")} rows (
          {percent} %)
        </div>
        <div className="small muted">
          {job.rowsPerSec !== null ? `${job.rowsPerSec.toFixed(0)} rows/s` : "– rows/s"} · {timeLeft(job.secondsLeft)}{" "}
          left
          {job.state === "RUNNING" ? ` · ${job.concurrency} in flight` : ""}
        </div>
      </td>
      <td>
        {job.failedRows > 0 ? (
          <button type="button" className="button" onClick={onFailures}>
            {job.failedRows} failed
          </button>
        ) : (
          "0"
        )}
      </td>
      <td className="actions">
        {job.state === "RUNNING" || job.state === "QUEUED" ? (
          <button type="button" className="button" onClick={() => pause.mutate({ id: job.id })}>
            Pause
          </button>
        ) : null}
        {job.state === "PAUSED" || job.state === "FAILED" ? (
          <button type="button" className="button" onClick={() => resume.mutate({ id: job.id })}>
            Resume
          </button>
        ) : null}
        {job.state === "RUNNING" || job.state === "QUEUED" || job.state === "PAUSED" ? (
          <button type="button" className="button" onClick={() => cancel.mutate({ id: job.id })}>
            Cancel
          </button>
        ) : null}
        {job.failedRows > 0 && (job.state === "DONE" || job.state === "PAUSED" || job.state === "FAILED") ? (
          <button type="button" className="button" onClick={() => retry.mutate({ id: job.id })}>
            Retry failed rows
          </button>
        ) : null}
        {job.hasResult ? (
          <a className="button" href={`/api/jobs/${job.id}/result.parquet`} download>
            Download results
          </a>
        ) : null}
      </td>
    </tr>
  );
}

function FailuresPanel({ id }: { id: string }) {
  const trpc = useTRPC();
  const failures = useQuery(trpc.jobs.failures.queryOptions({ id, take: 100 }));
  return (
    <div className="subcard" aria-label="Failed rows">
      <h3>Failed rows</h3>
      <QueryView query={failures} loadingLabel="Loading failed rows…">
        {(list) => (
          <table aria-label="Failed rows of the job">
            <thead>
              <tr>
                <th scope="col">Row</th>
                <th scope="col">Key</th>
                <th scope="col">Error</th>
                <th scope="col">Attempts</th>
              </tr>
            </thead>
            <tbody>
              {list.map((failure) => (
                <tr key={failure.row}>
                  <td>{failure.row}</td>
                  <td>
                    {Object.entries(failure.key)
                      .map(([key, value]) => `${key}=${String(value)}`)
                      .join(", ") || "–"}
                  </td>
                  <td>{failure.error}</td>
                  <td>{failure.attempts}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </QueryView>
    </div>
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
    const errors = [
      ...(datasetId === "" ? [{ path: "datasetId", message: "upload a dataset first" }] : []),
      ...(name === "" ? [{ path: "target.name", message: "required" }] : []),
      ...(parsed.problem !== undefined ? [{ path: "mapping", message: parsed.problem }] : []),
    ];
    if (errors.length > 0) {
      atFields(errors);
      return;
    }
    create.mutate({
      datasetId,
      target: { kind, name },
      ...(parsed.mapping.length > 0 ? { mapping: parsed.mapping } : {}),
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
      <FormAlert message={formMessage(problem, FIELDS)} />
      <div className="form-actions">
        <SubmitButton pending={create.isPending} label="Start job" pendingLabel="Checking the mapping…" />
      </div>
    </form>
  );
}

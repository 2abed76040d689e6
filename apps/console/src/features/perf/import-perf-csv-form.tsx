"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { type FormEvent, useId } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { SubmitButton } from "@/components/form/submit-button";
import { TextField } from "@/components/form/text-field";
import { useFormProblem } from "@/components/form/use-form-problem";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { usePerfTargets } from "./perf-targets";
import { reportHref } from "./perf-types";
import { TargetSelect } from "./target-select";

/** The most a CSV may weigh (the API's limit, checked here first so a large file is never read). */
const MAX_CSV_BYTES = 1024 * 1024;
const FIELDS = ["target", "target.name", "target.kind", "csv", "fileName", "instanceCount"];

/**
 * Imports a perf_analyzer CSV (`perf_analyzer -f perf.csv`, or `operon perf -f`)
 * as a report of a model or operator (perf.importCsv), then opens it. For
 * measurements made elsewhere: another host, a Triton server, the real deployment.
 */
export function ImportPerfCsvForm() {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const targets = usePerfTargets();
  const fileId = useId();
  const { problem, clear, fromError, atFields } = useFormProblem();
  const importCsv = useMutation(
    trpc.perf.importCsv.mutationOptions({
      onSuccess: async ({ id }) => {
        await queryClient.invalidateQueries({ queryKey: trpc.perf.list.pathKey() });
        router.push(reportHref(id));
      },
      onError: fromError,
    }),
  );
  if (targets.isPending || targets.error) return null;
  if (targets.models.length === 0 && targets.operators.length === 0) return null;

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const form = new FormData(event.currentTarget);
    const target = String(form.get("target") ?? "");
    const separator = target.indexOf(":");
    const file = form.get("csv");
    const instances = Number(form.get("instanceCount"));
    // Every problem at once, as the API would name them.
    const errors: Array<{ path: string; message: string }> = [];
    if (separator < 0) errors.push({ path: "target.name", message: "choose a model or operator" });
    if (!(file instanceof File) || file.size === 0) errors.push({ path: "csv", message: "choose a CSV file" });
    else if (file.size > MAX_CSV_BYTES) errors.push({ path: "csv", message: "at most 1 MiB" });
    if (!Number.isInteger(instances) || instances < 1 || instances > 1024)
      errors.push({ path: "instanceCount", message: "a whole number from 1 to 1024" });
    if (errors.length > 0 || !(file instanceof File)) return atFields(errors);
    importCsv.mutate({
      target: { kind: target.slice(0, separator) as "MODEL" | "OPERATOR", name: target.slice(separator + 1) },
      fileName: file.name,
      csv: await file.text(),
      instanceCount: instances,
    });
  };
  const csvError = fieldMessage(problem, "csv") ?? fieldMessage(problem, "fileName");
  const targetError =
    fieldMessage(problem, "target.name") ?? fieldMessage(problem, "target.kind") ?? fieldMessage(problem, "target");

  return (
    <form onSubmit={(event) => void submit(event)} noValidate className="form form-grid" aria-labelledby="import-title">
      <h2 id="import-title" className="form-title">
        Import a perf_analyzer CSV
      </h2>
      <p className="muted form-wide">
        A report from a CSV that <code>perf_analyzer -f perf.csv</code> or <code>operon perf -f perf.csv</code> wrote (a
        concurrency sweep), measured elsewhere. It counts as the target&apos;s latest report, for the scheduler too.
      </p>
      <TargetSelect models={targets.models} operators={targets.operators} error={targetError} />
      <div className="field">
        <label htmlFor={fileId}>CSV file</label>
        <input
          id={fileId}
          name="csv"
          type="file"
          accept=".csv,text/csv"
          required
          aria-invalid={csvError ? true : undefined}
          aria-describedby={csvError ? `${fileId}-error` : undefined}
        />
        {csvError ? (
          <p id={`${fileId}-error`} className="field-error">
            {csvError}
          </p>
        ) : null}
      </div>
      <TextField
        label="Instances measured"
        name="instanceCount"
        type="number"
        min={1}
        max={1024}
        step={1}
        inputMode="numeric"
        defaultValue="1"
        required
        hint="How many instances of the target served the measurement (capacity per instance divides by it)."
        error={fieldMessage(problem, "instanceCount")}
      />
      <FormAlert message={formMessage(problem, FIELDS)} />
      <div className="form-actions">
        <SubmitButton pending={importCsv.isPending} label="Import report" pendingLabel="Importing…" />
      </div>
    </form>
  );
}

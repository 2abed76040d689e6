"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { TextField } from "@/components/form/text-field";
import { useFormProblem } from "@/components/form/use-form-problem";
import { ErrorState } from "@/components/states/error-state";
import { LoadingState } from "@/components/states/loading-state";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { parsePerfForm } from "./perf-form-values";
import { usePerfTargets } from "./perf-targets";
import { TargetSelect } from "./target-select";
import { SubmitButton } from "@/components/form/submit-button";

const FIELDS = [
  "target.name",
  "target.kind",
  "target",
  "concurrency",
  "concurrency.start",
  "concurrency.end",
  "concurrency.step",
  "batchSize",
  "measurementIntervalMs",
];

/** Queues a perf run (perf.start); the page then follows its progress. */
export function NewPerfRunForm({ onStarted, queueBusy }: { onStarted: (id: string) => void; queueBusy: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const targets = usePerfTargets();
  const { problem, clear, fromError, atFields } = useFormProblem();
  const start = useMutation(
    trpc.perf.start.mutationOptions({
      onSuccess: async ({ id }) => {
        onStarted(id);
        await queryClient.invalidateQueries({ queryKey: trpc.perf.list.pathKey() });
      },
      onError: fromError,
    }),
  );

  if (targets.isPending) return <LoadingState label="Loading models and operators…" />;
  if (targets.error)
    return (
      <ErrorState title="Could not list what to measure" error={targets.error} onRetry={() => void targets.refetch()} />
    );
  if (targets.models.length === 0 && targets.operators.length === 0) {
    return <p className="notice">Nothing to measure: the gateway serves no ready model or operator. Load one first.</p>;
  }

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const parsed = parsePerfForm(new FormData(event.currentTarget));
    if (!parsed.ok) return atFields(parsed.fieldErrors);
    start.mutate(parsed.input);
  };
  const targetError =
    fieldMessage(problem, "target.name") ?? fieldMessage(problem, "target.kind") ?? fieldMessage(problem, "target");
  const defaultTarget =
    targets.models.find((option) => option.label === "add_sub")?.value ??
    targets.models[0]?.value ??
    targets.operators[0]?.value;

  return (
    <form onSubmit={submit} noValidate className="form form-grid" aria-labelledby="new-run-title">
      <h2 id="new-run-title" className="form-title">
        New run
      </h2>
      <TargetSelect
        models={targets.models}
        operators={targets.operators}
        {...(defaultTarget ? { defaultValue: defaultTarget } : {})}
        error={targetError}
      />
      <fieldset
        className="field fieldset-inline"
        aria-describedby={fieldMessage(problem, "concurrency") ? "concurrency-error" : undefined}
      >
        <legend>Concurrency (requests in flight)</legend>
        <div className="inline-inputs">
          <TextField
            label="From"
            name="concurrencyStart"
            type="number"
            min={1}
            step={1}
            inputMode="numeric"
            defaultValue="1"
            required
            error={fieldMessage(problem, "concurrency.start")}
          />
          <TextField
            label="To"
            name="concurrencyEnd"
            type="number"
            min={1}
            step={1}
            inputMode="numeric"
            defaultValue="4"
            required
            error={fieldMessage(problem, "concurrency.end")}
          />
          <TextField
            label="Step"
            name="concurrencyStep"
            type="number"
            min={1}
            step={1}
            inputMode="numeric"
            defaultValue="1"
            required
            error={fieldMessage(problem, "concurrency.step")}
          />
        </div>
        {fieldMessage(problem, "concurrency") ? (
          <p id="concurrency-error" className="field-error">
            {fieldMessage(problem, "concurrency")}
          </p>
        ) : null}
      </fieldset>
      <TextField
        label="Batch size"
        name="batchSize"
        type="number"
        min={1}
        step={1}
        inputMode="numeric"
        defaultValue="1"
        required
        hint="Inferences per request; at most the target's max_batch_size."
        error={fieldMessage(problem, "batchSize")}
      />
      <TextField
        label="Measurement interval (seconds)"
        name="measurementIntervalSecs"
        type="number"
        min={0.1}
        step={0.1}
        inputMode="decimal"
        defaultValue="5"
        required
        hint="One measurement window; each step measures until three windows agree."
        error={fieldMessage(problem, "measurementIntervalMs")}
      />
      <FormAlert message={formMessage(problem, FIELDS)} />
      <div className="form-actions">
        <SubmitButton pending={start.isPending} label="Start run" pendingLabel="Starting…" />
        {queueBusy ? <span className="muted">A run is going; a new one waits in the queue until it ends.</span> : null}
      </div>
    </form>
  );
}

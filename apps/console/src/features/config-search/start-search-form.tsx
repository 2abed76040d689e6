"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState, type FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { SelectField } from "@/components/form/select-field";
import { SubmitButton } from "@/components/form/submit-button";
import { TextField } from "@/components/form/text-field";
import { useFormProblem } from "@/components/form/use-form-problem";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { formatMoney } from "@/lib/number-format";
import { useTRPC } from "@/lib/trpc";
import { OBJECTIVE_LABELS, type ConfigSearchObjective } from "./config-search-types";

const FIELDS = [
  "objective",
  "p99BudgetMs",
  "model",
  "bounds.maxCandidates",
  "bounds.maxInstances",
  "measurement.maxConcurrency",
  "measurement.measurementIntervalMs",
];

/** A positive number from the form, or a field problem naming it. */
function numberField(
  data: FormData,
  name: string,
  path: string,
  integer: boolean,
  problems: Array<{ path: string; message: string }>,
): number | undefined {
  const raw = String(data.get(name) ?? "").trim();
  if (raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    problems.push({ path, message: integer ? "a whole number above 0" : "a number above 0" });
    return undefined;
  }
  return value;
}

/** Starts a config search of `model` (configSearch.start); the page then follows it. */
export function StartSearchForm({
  model,
  disabled,
  onStarted,
}: {
  model: string;
  disabled: boolean;
  onStarted: (id: string) => void;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { problem, clear, fromError, atFields } = useFormProblem();
  const [objective, setObjective] = useState<ConfigSearchObjective>("MAX_THROUGHPUT");
  // The cost objective prices candidates with the default hardware profile; say so before the API refuses.
  const profiles = useQuery(trpc.hardware.list.queryOptions());
  const pricedWith = profiles.data?.find((profile) => profile.isDefault);
  const noProfile = profiles.data !== undefined && pricedWith === undefined;
  const start = useMutation(
    trpc.configSearch.start.mutationOptions({
      onSuccess: async ({ id }) => {
        onStarted(id);
        await queryClient.invalidateQueries({ queryKey: trpc.configSearch.list.pathKey() });
      },
      onError: fromError,
    }),
  );

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const data = new FormData(event.currentTarget);
    const problems: Array<{ path: string; message: string }> = [];
    const p99BudgetMs = numberField(data, "p99BudgetMs", "p99BudgetMs", false, problems);
    if (p99BudgetMs === undefined && problems.length === 0) problems.push({ path: "p99BudgetMs", message: "required" });
    const maxCandidates = numberField(data, "maxCandidates", "bounds.maxCandidates", true, problems);
    const maxInstances = numberField(data, "maxInstances", "bounds.maxInstances", true, problems);
    const maxConcurrency = numberField(data, "maxConcurrency", "measurement.maxConcurrency", true, problems);
    const intervalSecs = numberField(
      data,
      "measurementIntervalSecs",
      "measurement.measurementIntervalMs",
      false,
      problems,
    );
    if (problems.length > 0) return atFields(problems);
    start.mutate({
      model,
      objective: String(data.get("objective")) as ConfigSearchObjective,
      p99BudgetMs: p99BudgetMs!,
      bounds: {
        ...(maxCandidates !== undefined ? { maxCandidates } : {}),
        ...(maxInstances !== undefined ? { maxInstances } : {}),
      },
      measurement: {
        ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
        ...(intervalSecs !== undefined ? { measurementIntervalMs: Math.round(intervalSecs * 1000) } : {}),
      },
    });
  };

  return (
    <form onSubmit={submit} noValidate className="form form-grid" aria-labelledby="new-search-title">
      <h2 id="new-search-title" className="form-title">
        New search
      </h2>
      <div className="search-objective">
        <SelectField
          label="Objective"
          name="objective"
          value={objective}
          onChange={(event) => setObjective(event.target.value as ConfigSearchObjective)}
          options={(Object.keys(OBJECTIVE_LABELS) as ConfigSearchObjective[]).map((value) => ({
            value,
            label: OBJECTIVE_LABELS[value],
          }))}
          error={fieldMessage(problem, "objective")}
        />
        {objective === "MIN_COST" && noProfile ? (
          <p className="notice" role="status">
            The lowest cost needs a hardware profile to price the candidates, and there is none yet: an admin adds one
            under <Link href="/hardware">Hardware</Link>, or choose the highest throughput.
          </p>
        ) : null}
        {objective === "MIN_COST" && pricedWith !== undefined ? (
          <p className="field-hint">
            Candidates are priced with the default hardware profile, {pricedWith.name} (
            {formatMoney(pricedWith.costPerHour, pricedWith.currency)}/h).
          </p>
        ) : null}
      </div>
      <TextField
        label="p99 budget (ms)"
        name="p99BudgetMs"
        type="number"
        min={0.001}
        step="any"
        inputMode="decimal"
        defaultValue="50"
        required
        hint="A recommended config keeps its p99 latency within this."
        error={fieldMessage(problem, "p99BudgetMs")}
      />
      <details className="search-advanced">
        <summary>Bounds and measurement</summary>
        <div className="form-grid">
          <TextField
            label="Most candidates"
            name="maxCandidates"
            type="number"
            min={1}
            step={1}
            inputMode="numeric"
            placeholder="12"
            error={fieldMessage(problem, "bounds.maxCandidates")}
          />
          <TextField
            label="Most instances"
            name="maxInstances"
            type="number"
            min={1}
            step={1}
            inputMode="numeric"
            placeholder="4"
            error={fieldMessage(problem, "bounds.maxInstances")}
          />
          <TextField
            label="Highest concurrency"
            name="maxConcurrency"
            type="number"
            min={1}
            step={1}
            inputMode="numeric"
            placeholder="8"
            hint="Each candidate is measured at 1, 2, 4, … up to this."
            error={fieldMessage(problem, "measurement.maxConcurrency")}
          />
          <TextField
            label="Measurement window (seconds)"
            name="measurementIntervalSecs"
            type="number"
            min={0.1}
            step={0.1}
            inputMode="decimal"
            placeholder="1"
            error={fieldMessage(problem, "measurement.measurementIntervalMs")}
          />
        </div>
      </details>
      <FormAlert message={formMessage(problem, FIELDS)} />
      <div className="form-actions">
        <SubmitButton pending={start.isPending} label="Start search" pendingLabel="Starting…" disabled={disabled} />
        {disabled ? <span className="muted">A search is going; one runs at a time.</span> : null}
      </div>
    </form>
  );
}

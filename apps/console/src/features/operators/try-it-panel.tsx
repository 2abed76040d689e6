"use client";

import { formatNumber } from "@/lib/number-format";
import { useMutation } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { useFormProblem } from "@/components/form/use-form-problem";
import { formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { StepTimeline } from "./step-timeline";
import { exampleInputs, inputsText, parseInputsText, parseParametersText } from "./try-inputs";
import { TryOutputs } from "./try-outputs";
import { SubmitButton } from "@/components/form/submit-button";

/** One inference through the operator (operators.tryRun): inputs in; outputs, and each step's time and outputs, out. */
export function TryItPanel({ name, spec }: { name: string; spec: Record<string, unknown> }) {
  const trpc = useTRPC();
  const id = useId();
  const [inputs, setInputs] = useState(() => inputsText(exampleInputs(spec)));
  const [parameters, setParameters] = useState("");
  const { problem, clear, fromError, atField } = useFormProblem();
  const run = useMutation(trpc.operators.tryRun.mutationOptions({ onError: fromError }));

  const inputErrors = problem?.fieldErrors.filter((field) => field.path === "inputs" || field.path.startsWith("inputs.")) ?? [];
  const parameterErrors = problem?.fieldErrors.filter((field) => field.path === "parameters" || field.path.startsWith("parameters.")) ?? [];
  const shown = [...inputErrors, ...parameterErrors].map((field) => field.path);

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    run.reset();
    const parsedInputs = parseInputsText(inputs);
    if (!parsedInputs.ok) return atField("inputs", parsedInputs.message);
    const parsedParameters = parseParametersText(parameters);
    if (!parsedParameters.ok) return atField("parameters", parsedParameters.message);
    run.mutate({ name, inputs: parsedInputs.inputs, ...(parsedParameters.parameters ? { parameters: parsedParameters.parameters } : {}) });
  };

  return (
    <section className="card" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Try it</h2>
      <form className="form" onSubmit={submit} noValidate aria-label={`Try ${name}`}>
        <div className="field">
          <label htmlFor={`${id}-inputs`}>Inputs (KServe v2 JSON tensors)</label>
          <p id={`${id}-inputs-hint`} className="field-hint">
            Prefilled from the operator&apos;s declared inputs{spec["maxBatchSize"] ? " with a batch of 1" : ""}; edit the data as you like.
          </p>
          <textarea
            id={`${id}-inputs`}
            className="code-input"
            rows={Math.min(12, 3 + (inputs.match(/\n/g)?.length ?? 0))}
            value={inputs}
            onChange={(event) => setInputs(event.currentTarget.value)}
            spellCheck={false}
            aria-invalid={inputErrors.length > 0 ? true : undefined}
            aria-describedby={`${id}-inputs-hint${inputErrors.length > 0 ? ` ${id}-inputs-error` : ""}`}
          />
          {inputErrors.length > 0 ? (
            <p id={`${id}-inputs-error`} className="field-error">
              {inputErrors.map((field) => (field.path === "inputs" ? field.message : `${field.path}: ${field.message}`)).join("; ")}
            </p>
          ) : null}
        </div>
        <div className="field">
          <label htmlFor={`${id}-parameters`}>Request parameters (optional JSON object)</label>
          <input
            id={`${id}-parameters`}
            className="code-input"
            value={parameters}
            onChange={(event) => setParameters(event.currentTarget.value)}
            placeholder='{"mode": "fast"}'
            spellCheck={false}
            aria-invalid={parameterErrors.length > 0 ? true : undefined}
            aria-describedby={parameterErrors.length > 0 ? `${id}-parameters-error` : undefined}
          />
          {parameterErrors.length > 0 ? (
            <p id={`${id}-parameters-error`} className="field-error">
              {parameterErrors.map((field) => field.message).join("; ")}
            </p>
          ) : null}
        </div>
        <FormAlert message={formMessage(problem, shown)} />
        <div className="form-actions">
          <SubmitButton pending={run.isPending} label="Run" pendingLabel="Running…" />
        </div>
      </form>
      {run.data ? (
        <section className="try-result" aria-labelledby={`${id}-result-title`}>
          <h3 id={`${id}-result-title`}>Result</h3>
          <p className="muted">Answered in {formatNumber(run.data.latencyMs, 3)} ms (round trip from the control plane).</p>
          <TryOutputs outputs={run.data.outputs} />
          {run.data.steps.length > 0 ? <StepTimeline steps={run.data.steps} /> : <p className="muted">The gateway sent no step timings.</p>}
        </section>
      ) : null}
    </section>
  );
}

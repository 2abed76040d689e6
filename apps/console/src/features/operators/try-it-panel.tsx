"use client";

import { formatMs } from "@/lib/number-format";
import { useMutation } from "@tanstack/react-query";
import { useId, useMemo, useState } from "react";
import { useFormProblem } from "@/components/form/use-form-problem";
import { formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { TryItForm, type RequestTensor } from "../try-it/try-it-form";
import { StepTimeline } from "./step-timeline";
import { declaredInputs, parseParametersText } from "./try-inputs";
import { TryOutputs } from "./try-outputs";

/** One inference through the operator (operators.tryRun): inputs in, as JSON or a form; outputs, and each step's time and outputs, out. */
export function TryItPanel({ name, spec }: { name: string; spec: Record<string, unknown> }) {
  const trpc = useTRPC();
  const id = useId();
  const declared = useMemo(() => declaredInputs(spec), [spec]);
  const [parameters, setParameters] = useState("");
  const { problem, clear, fromError, atField } = useFormProblem();
  const run = useMutation(trpc.operators.tryRun.mutationOptions({ onError: fromError }));

  const inputErrors =
    problem?.fieldErrors.filter((field) => field.path === "inputs" || field.path.startsWith("inputs.")) ?? [];
  const parameterErrors =
    problem?.fieldErrors.filter((field) => field.path === "parameters" || field.path.startsWith("parameters.")) ?? [];
  const shown = [...inputErrors, ...parameterErrors].map((field) => field.path);

  const submit = (inputs: RequestTensor[]) => {
    clear();
    run.reset();
    const parsedParameters = parseParametersText(parameters);
    if (!parsedParameters.ok) return atField("parameters", parsedParameters.message);
    run.mutate({ name, inputs, ...(parsedParameters.parameters ? { parameters: parsedParameters.parameters } : {}) });
  };

  return (
    <section className="card" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Try it</h2>
      <TryItForm
        name={name}
        declared={declared}
        initialMode={declared.some((input) => input.datatype === "BYTES") ? "form" : "json"}
        allowFiles
        pending={run.isPending}
        onRun={submit}
        onInvalid={() => {
          clear();
          run.reset();
        }}
        jsonError={
          inputErrors.length > 0
            ? inputErrors
                .map((field) => (field.path === "inputs" ? field.message : `${field.path}: ${field.message}`))
                .join("; ")
            : undefined
        }
        alert={formMessage(problem, shown)}
        hint={`Prefilled from the operator's declared inputs${spec["maxBatchSize"] ? " with a batch of 1" : ""}; edit the data as you like.`}
        extraFields={
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
        }
      />
      {run.data ? (
        <section className="try-result" aria-labelledby={`${id}-result-title`}>
          <h3 id={`${id}-result-title`}>Result</h3>
          <p className="muted">Answered in {formatMs(run.data.latencyMs)} (round trip from the control plane).</p>
          <TryOutputs outputs={run.data.outputs} />
          {run.data.steps.length > 0 ? (
            <StepTimeline steps={run.data.steps} />
          ) : (
            <p className="muted">The gateway sent no step timings.</p>
          )}
        </section>
      ) : null}
    </section>
  );
}

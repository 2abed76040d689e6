"use client";

import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { apiProblem, fieldMessage, type ApiProblem } from "@/lib/api-problem";
import type { RouterInputs, RouterOutputs } from "@/lib/api-types";
import { useTRPC } from "@/lib/trpc";
import { useInvalidateModels } from "../use-invalidate-models";
import { InferOutputsTable } from "./infer-outputs-table";
import { concreteShape, defaultValues, elementCount, formatShape, parseShape, parseValues } from "./tensor-values";
import { TryInputFields, type TryInputDraft } from "./try-input-fields";
import { SubmitButton } from "@/components/form/submit-button";

type TensorMetadata = RouterOutputs["models"]["get"]["inputs"][number];
type InferInput = RouterInputs["models"]["infer"]["inputs"][number];
type InputErrors = { datatype?: string; shape?: string; data?: string };

function draftOf(tensor: TensorMetadata): TryInputDraft {
  const datatype = tensor.datatype ?? "FP32";
  const shape = concreteShape(tensor.shape);
  return { name: tensor.name, datatype, shapeText: formatShape(shape), dataText: JSON.stringify(defaultValues(datatype, elementCount(shape))), modelShape: tensor.shape };
}

/** Reads every input; the values, or the problems per input. */
function readInputs(drafts: readonly TryInputDraft[]): { inputs: InferInput[]; errors: InputErrors[]; ok: boolean } {
  const errors: InputErrors[] = drafts.map(() => ({}));
  const inputs: InferInput[] = [];
  drafts.forEach((draft, index) => {
    const shape = parseShape(draft.shapeText);
    if (!shape.ok) {
      errors[index]!.shape = shape.message;
      return;
    }
    const data = parseValues(draft.dataText, draft.datatype, elementCount(shape.value));
    if (!data.ok) {
      errors[index]!.data = data.message;
      return;
    }
    inputs.push({ name: draft.name, datatype: draft.datatype as InferInput["datatype"], shape: shape.value, data: data.value });
  });
  return { inputs, errors, ok: inputs.length === drafts.length };
}

function apiErrorsAt(problem: ApiProblem | null, index: number): InputErrors {
  const at = (field: string) => fieldMessage(problem, `inputs.${index}.${field}`) ?? fieldMessage(problem, `inputs[${index}].${field}`);
  return { ...(at("datatype") ? { datatype: at("datatype")! } : {}), ...(at("shape") ? { shape: at("shape")! } : {}), ...(at("data") ? { data: at("data")! } : {}) };
}

/**
 * One inference against the loaded model, from the browser, through the
 * control plane (models.infer): inputs prefilled from the model's metadata
 * (dynamic sizes as 1, values 0, 1, 2, …), the outputs and the latency.
 */
export function TryItPanel({ name, inputs }: { name: string; inputs: readonly TensorMetadata[] }) {
  const trpc = useTRPC();
  const [drafts, setDrafts] = useState(() => inputs.map(draftOf));
  const [localErrors, setLocalErrors] = useState<InputErrors[]>([]);
  const invalidate = useInvalidateModels();
  // The statistics on the page count this request too.
  const infer = useMutation(trpc.models.infer.mutationOptions({ onSuccess: invalidate }));
  const problem = infer.isError ? apiProblem(infer.error) : null;

  const change = (index: number, patch: Partial<TryInputDraft>) =>
    setDrafts((current) =>
      current.map((draft, at) => {
        if (at !== index) return draft;
        const next = { ...draft, ...patch };
        // A new shape or datatype gets fresh values of the right length, unless the person typed their own.
        if ((patch.shapeText !== undefined || patch.datatype !== undefined) && draft.dataText === JSON.stringify(defaultValues(draft.datatype, countOf(draft.shapeText)))) {
          const shape = parseShape(next.shapeText);
          if (shape.ok) next.dataText = JSON.stringify(defaultValues(next.datatype, elementCount(shape.value)));
        }
        return next;
      }),
    );

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const read = readInputs(drafts);
    setLocalErrors(read.errors);
    if (!read.ok) {
      // The last result answered other inputs: under a new error it would read as this one's.
      infer.reset();
      return;
    }
    infer.mutate({ name, inputs: read.inputs });
  };

  const fieldsShown = drafts.flatMap((_, index) => ["datatype", "shape", "data"].flatMap((field) => [`inputs.${index}.${field}`, `inputs[${index}].${field}`]));
  const alert = problem && !(problem.fieldErrors.length > 0 && problem.fieldErrors.every((error) => fieldsShown.includes(error.path))) ? problem.message : undefined;

  if (inputs.length === 0) return <p className="muted">The gateway reports no inputs for this model.</p>;
  return (
    <form onSubmit={submit} noValidate className="form try-it" aria-label={`Try ${name}`}>
      {drafts.map((draft, index) => (
        <TryInputFields key={draft.name} input={draft} errors={{ ...apiErrorsAt(problem, index), ...localErrors[index] }} onChange={(patch) => change(index, patch)} />
      ))}
      <FormAlert message={alert ? `The request failed: ${alert}` : undefined} />
      <div className="form-actions">
        <SubmitButton pending={infer.isPending} label="Run" pendingLabel="Running…" />
      </div>
      {infer.data && !infer.isPending ? <InferOutputsTable result={infer.data} /> : null}
    </form>
  );
}

function countOf(shapeText: string): number {
  const shape = parseShape(shapeText);
  return shape.ok ? elementCount(shape.value) : 0;
}

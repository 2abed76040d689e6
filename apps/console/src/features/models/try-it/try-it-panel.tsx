"use client";

import { useMutation } from "@tanstack/react-query";
import { apiProblem, fieldMessage, type ApiProblem } from "@/lib/api-problem";
import type { RouterInputs, RouterOutputs } from "@/lib/api-types";
import { useTRPC } from "@/lib/trpc";
import { TryItForm, type InputErrors } from "../../try-it/try-it-form";
import { useInvalidateModels } from "../use-invalidate-models";
import { InferOutputsTable } from "./infer-outputs-table";

type TensorMetadata = RouterOutputs["models"]["get"]["inputs"][number];
type InferInput = RouterInputs["models"]["infer"]["inputs"][number];

function apiErrorsAt(problem: ApiProblem | null, index: number): InputErrors {
  const at = (field: string) =>
    fieldMessage(problem, `inputs.${index}.${field}`) ?? fieldMessage(problem, `inputs[${index}].${field}`);
  return {
    ...(at("datatype") ? { datatype: at("datatype")! } : {}),
    ...(at("shape") ? { shape: at("shape")! } : {}),
    ...(at("data") ? { data: at("data")! } : {}),
  };
}

/**
 * One inference against the loaded model, from the browser, through the
 * control plane (models.infer): inputs prefilled from the model's metadata
 * (dynamic sizes as 1, values 0, 1, 2, …), as a form or as JSON; the
 * outputs and the latency.
 */
export function TryItPanel({ name, inputs }: { name: string; inputs: readonly TensorMetadata[] }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateModels();
  // The statistics on the page count this request too.
  const infer = useMutation(trpc.models.infer.mutationOptions({ onSuccess: invalidate }));
  const problem = infer.isError ? apiProblem(infer.error) : null;

  const fieldsShown = inputs.flatMap((_, index) =>
    ["datatype", "shape", "data"].flatMap((field) => [`inputs.${index}.${field}`, `inputs[${index}].${field}`]),
  );
  const alert =
    problem &&
    !(problem.fieldErrors.length > 0 && problem.fieldErrors.every((error) => fieldsShown.includes(error.path)))
      ? problem.message
      : undefined;

  if (inputs.length === 0) return <p className="muted">The gateway reports no inputs for this model.</p>;
  return (
    <TryItForm
      name={name}
      declared={inputs}
      initialMode="form"
      allowFiles
      pending={infer.isPending}
      onRun={(tensors) => infer.mutate({ name, inputs: tensors as InferInput[] })}
      onInvalid={() => infer.reset()}
      fieldErrors={(index) => apiErrorsAt(problem, index)}
      jsonError={
        problem && !alert ? problem.fieldErrors.map((error) => `${error.path}: ${error.message}`).join("; ") : undefined
      }
      alert={alert ? `The request failed: ${alert}` : undefined}
    >
      {infer.data && !infer.isPending ? <InferOutputsTable result={infer.data} /> : null}
    </TryItForm>
  );
}

"use client";

import { useId } from "react";
import { SelectField } from "@/components/form/select-field";
import type { ApiProblem } from "@/lib/api-problem";
import { CONFIG_DATA_TYPES, type TensorDraft, type TensorKind } from "./config-draft";
import { errorAt } from "./config-field-errors";
import { ParsedTextField } from "./parsed-text-field";
import { formatDims, parseDims } from "./parse-values";

export interface ModelTensorInfo {
  name: string;
  datatype?: string | undefined;
  shape: number[];
}

/**
 * One input or output of the config: its name (fixed: it must be the
 * model's), data type and dims, with what the model file itself says.
 */
export function TensorFieldset({
  kind,
  index,
  tensor,
  model,
  problem,
  onChange,
  onValidity,
}: {
  kind: TensorKind;
  index: number;
  tensor: TensorDraft;
  model: ModelTensorInfo | undefined;
  problem: ApiProblem | null;
  onChange: (change: Partial<TensorDraft>) => void;
  onValidity: (message: string | undefined) => void;
}) {
  const nameId = useId();
  const at = `${kind}[${index}]`;
  const dataType = tensor.data_type ?? "";
  const typeOptions = [
    ...(CONFIG_DATA_TYPES.includes(dataType as never) || dataType === "" ? [] : [dataType]),
    ...CONFIG_DATA_TYPES,
  ].map((type) => ({ value: type, label: type }));
  const nameError = errorAt(problem, { path: `${at}.name` });
  const legend = `${kind === "input" ? "Input" : "Output"} “${tensor.name}”`;
  return (
    <fieldset className="tensor-fieldset">
      <legend>{legend}</legend>
      <div className="field">
        <label htmlFor={nameId}>Name</label>
        <input id={nameId} value={tensor.name} readOnly aria-invalid={nameError ? true : undefined} />
        {nameError ? <p className="field-error">{nameError}</p> : null}
      </div>
      <SelectField
        label="Data type"
        name={`${at}.data_type`}
        options={dataType === "" ? [{ value: "", label: "(not set)" }, ...typeOptions] : typeOptions}
        value={dataType}
        onChange={(event) => onChange({ data_type: event.target.value })}
        error={errorAt(problem, { path: `${at}.data_type` })}
      />
      <ParsedTextField
        label="Dims"
        name={`${at}.dims`}
        value={tensor.dims ?? []}
        format={formatDims}
        parse={parseDims}
        onChange={(dims) => onChange({ dims })}
        onValidity={onValidity}
        hint={model ? `The model file: ${model.datatype ?? "?"} [${model.shape.join(", ")}]` : undefined}
        error={errorAt(problem, { path: `${at}.dims` }) ?? errorAt(problem, { path: `${at}.reshape` })}
      />
    </fieldset>
  );
}

"use client";

import { useId } from "react";
import { SelectField } from "@/components/form/select-field";
import { TextField } from "@/components/form/text-field";
import { KSERVE_DATATYPES } from "./tensor-values";

export interface TryInputDraft {
  name: string;
  datatype: string;
  shapeText: string;
  dataText: string;
  /** The model's shape (-1 dynamic), for the hint. */
  modelShape: number[];
}

/** One input of the request: datatype, shape and the values as a JSON array. */
export function TryInputFields({
  input,
  errors,
  onChange,
}: {
  input: TryInputDraft;
  errors: { datatype?: string | undefined; shape?: string | undefined; data?: string | undefined };
  onChange: (change: Partial<Pick<TryInputDraft, "datatype" | "shapeText" | "dataText">>) => void;
}) {
  const dataId = useId();
  const options = (KSERVE_DATATYPES as readonly string[]).includes(input.datatype)
    ? KSERVE_DATATYPES
    : [input.datatype, ...KSERVE_DATATYPES];
  return (
    <fieldset className="try-input">
      <legend>Input “{input.name}”</legend>
      <div className="try-input-meta">
        <SelectField
          label="Datatype"
          name={`${input.name}.datatype`}
          options={options.map((type) => ({ value: type, label: type }))}
          value={input.datatype}
          error={errors.datatype}
          onChange={(event) => onChange({ datatype: event.target.value })}
        />
        <TextField
          label="Shape"
          name={`${input.name}.shape`}
          value={input.shapeText}
          autoComplete="off"
          spellCheck={false}
          hint={`The model: [${input.modelShape.join(", ")}] (-1: any size)`}
          error={errors.shape}
          onChange={(event) => onChange({ shapeText: event.target.value })}
        />
      </div>
      <div className="field">
        <label htmlFor={dataId}>Data (JSON array, row-major)</label>
        <textarea
          id={dataId}
          className="code-textarea"
          rows={3}
          spellCheck={false}
          value={input.dataText}
          aria-invalid={errors.data ? true : undefined}
          aria-describedby={errors.data ? `${dataId}-error` : undefined}
          onChange={(event) => onChange({ dataText: event.target.value })}
        />
        {errors.data ? (
          <p id={`${dataId}-error`} className="field-error">
            {errors.data}
          </p>
        ) : null}
      </div>
    </fieldset>
  );
}

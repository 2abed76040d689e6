"use client";

import { type ChangeEvent, useId, useState } from "react";
import { SelectField } from "@/components/form/select-field";
import { TextField } from "@/components/form/text-field";
import { formatBytes } from "@/lib/number-format";
import { numericFileValues } from "./numeric-file";
import { bytesToBase64, type FillKind, formatShape, KSERVE_DATATYPES } from "./tensor-values";

/** The largest file Try it sends (the API takes 8 MiB bodies; base64 adds a third). */
export const MAX_TRY_FILE_BYTES = 6 * 1024 * 1024;

/** A file picked for a BYTES input: every element of the tensor carries its raw bytes. */
export interface TryInputFile {
  name: string;
  sizeBytes: number;
  base64: string;
}

export interface TryInputDraft {
  name: string;
  datatype: string;
  shapeText: string;
  dataText: string;
  /** The model's shape (-1 dynamic), for the hint. */
  modelShape: number[];
  /** BYTES only: a picked file instead of the typed strings. */
  file?: TryInputFile | undefined;
}

const FILLS: Array<{ kind: FillKind; label: string }> = [
  { kind: "zeros", label: "Zeros" },
  { kind: "random", label: "Random" },
  { kind: "ramp", label: "0, 1, 2, …" },
];

/** One input of the request: datatype, shape and the values as a JSON array. */
export function TryInputFields({
  input,
  errors,
  onChange,
  onFill,
  allowFile = false,
}: {
  input: TryInputDraft;
  errors: { datatype?: string | undefined; shape?: string | undefined; data?: string | undefined };
  onChange: (change: Partial<Pick<TryInputDraft, "datatype" | "shapeText" | "dataText" | "file">>) => void;
  /** Fill the whole tensor (its shape as typed) at once. */
  onFill?: (kind: FillKind) => void;
  /** BYTES inputs may take a file (the model's Try it; the API sends it as binary data). */
  allowFile?: boolean;
}) {
  const dataId = useId();
  const fileId = useId();
  const [fileError, setFileError] = useState<string | undefined>();
  const bytes = input.datatype === "BYTES";
  const pick = async (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.currentTarget.files?.[0];
    event.currentTarget.value = "";
    if (file === undefined) return;
    if (file.size > MAX_TRY_FILE_BYTES) {
      setFileError(
        `${file.name} is ${formatBytes(file.size)}; Try it sends files up to ${formatBytes(MAX_TRY_FILE_BYTES)}`,
      );
      return;
    }
    setFileError(undefined);
    const base64 = bytesToBase64(new Uint8Array(await file.arrayBuffer()));
    onChange({ file: { name: file.name, sizeBytes: file.size, base64 } });
  };
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
      {bytes && allowFile ? (
        <div className="field">
          <label htmlFor={fileId}>File (sent as raw bytes, e.g. a PNG)</label>
          <input
            id={fileId}
            type="file"
            aria-invalid={fileError ? true : undefined}
            aria-describedby={fileError ? `${fileId}-error` : undefined}
            onChange={(event) => void pick(event)}
          />
          {fileError ? (
            <p id={`${fileId}-error`} className="field-error">
              {fileError}
            </p>
          ) : null}
        </div>
      ) : null}
      {input.file ? (
        <p className="try-input-file" role="status">
          <span>
            Sends <strong>{input.file.name}</strong> ({formatBytes(input.file.sizeBytes)}) as every element.
          </span>{" "}
          <button type="button" className="button-link" onClick={() => onChange({ file: undefined })}>
            Type strings instead
          </button>
        </p>
      ) : (
        <TryDataField
          input={input}
          dataId={dataId}
          error={errors.data}
          onChange={onChange}
          onFill={bytes ? undefined : onFill}
        />
      )}
      {!bytes && allowFile ? <NumericFileField input={input} onChange={onChange} /> : null}
    </fieldset>
  );
}

function TryDataField({
  input,
  dataId,
  error,
  onChange,
  onFill,
}: {
  input: TryInputDraft;
  dataId: string;
  error: string | undefined;
  onChange: (change: { dataText: string }) => void;
  onFill: ((kind: FillKind) => void) | undefined;
}) {
  const errors = { data: error };
  return (
    <>
      {onFill ? (
        <div className="try-fill" role="group" aria-label={`Fill “${input.name}” with`}>
          <span className="muted small">Fill with</span>
          {FILLS.map((fill) => (
            <button key={fill.kind} type="button" className="button" onClick={() => onFill(fill.kind)}>
              {fill.label}
            </button>
          ))}
        </div>
      ) : null}
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
    </>
  );
}

/**
 * A numeric input's values from a file: .npy (its shape too), .json, or raw little-endian values of the
 * datatype (numeric-file.ts). The values land in the data field, where they can still be read and edited.
 */
function NumericFileField({
  input,
  onChange,
}: {
  input: TryInputDraft;
  onChange: (change: { dataText?: string; shapeText?: string }) => void;
}) {
  const fileId = useId();
  const [status, setStatus] = useState<{ error: boolean; text: string } | undefined>();
  const pick = async (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.currentTarget.files?.[0];
    event.currentTarget.value = "";
    if (file === undefined) return;
    if (file.size > MAX_TRY_FILE_BYTES) {
      setStatus({
        error: true,
        text: `${file.name} is ${formatBytes(file.size)}; Try it reads files up to ${formatBytes(MAX_TRY_FILE_BYTES)}`,
      });
      return;
    }
    const parsed = numericFileValues(new Uint8Array(await file.arrayBuffer()), file.name, input.datatype);
    if (!parsed.ok) {
      setStatus({ error: true, text: parsed.message });
      return;
    }
    const { values, shape } = parsed.value;
    onChange({ dataText: JSON.stringify(values), ...(shape !== undefined ? { shapeText: formatShape(shape) } : {}) });
    setStatus({
      error: false,
      text: `Read ${values.length} values from ${file.name}${shape !== undefined ? ` (shape ${formatShape(shape)})` : ""}.`,
    });
  };
  return (
    <div className="field">
      <label htmlFor={fileId}>
        Or read the values from a file (.npy, .json, or raw little-endian {input.datatype})
      </label>
      <input
        id={fileId}
        type="file"
        aria-invalid={status?.error ? true : undefined}
        aria-describedby={status ? `${fileId}-status` : undefined}
        onChange={(event) => void pick(event)}
      />
      {status ? (
        <p id={`${fileId}-status`} className={status.error ? "field-error" : "muted small"} role="status">
          {status.text}
        </p>
      ) : null}
    </div>
  );
}

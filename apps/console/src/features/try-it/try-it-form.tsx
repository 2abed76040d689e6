"use client";

import { useId, useState, type FormEvent, type ReactNode } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { SubmitButton } from "@/components/form/submit-button";
import {
  concreteShape,
  initialValues,
  elementCount,
  fillValues,
  formatShape,
  parseShape,
  parseValues,
  type TensorValue,
} from "./tensor-values";
import { TryInputFields, type TryInputDraft } from "./try-input-fields";

/** An input as the model or operator declares it: the request's shape, -1 for any size (the batch dimension included). */
export interface DeclaredInput {
  name: string;
  datatype: string | null;
  shape: readonly number[];
}

export interface RequestTensor {
  name: string;
  datatype: string;
  shape: number[];
  data: TensorValue[];
  /** "base64": BYTES elements are base64 of a picked file's raw bytes. */
  encoding?: "base64";
}

export type TryInputsMode = "form" | "json";
export type InputErrors = { datatype?: string; shape?: string; data?: string };

function draftOf(input: DeclaredInput): TryInputDraft {
  const datatype = input.datatype ?? "FP32";
  const shape = concreteShape(input.shape);
  return {
    name: input.name,
    datatype,
    shapeText: formatShape(shape),
    dataText: JSON.stringify(initialValues(datatype, elementCount(shape))),
    modelShape: [...input.shape],
  };
}

/** Reads every input of the form; the tensors, or the problems per input. */
function readDrafts(drafts: readonly TryInputDraft[]): { inputs: RequestTensor[]; errors: InputErrors[]; ok: boolean } {
  const errors: InputErrors[] = drafts.map(() => ({}));
  const inputs: RequestTensor[] = [];
  drafts.forEach((draft, index) => {
    const shape = parseShape(draft.shapeText);
    if (!shape.ok) return void (errors[index]!.shape = shape.message);
    if (draft.file && draft.datatype === "BYTES") {
      const data = new Array<string>(elementCount(shape.value)).fill(draft.file.base64);
      inputs.push({ name: draft.name, datatype: draft.datatype, shape: shape.value, data, encoding: "base64" });
      return;
    }
    const data = parseValues(draft.dataText, draft.datatype, elementCount(shape.value));
    if (!data.ok) return void (errors[index]!.data = data.message);
    inputs.push({ name: draft.name, datatype: draft.datatype, shape: shape.value, data: data.value });
  });
  return { inputs, errors, ok: inputs.length === drafts.length };
}

/** One tensor per line: readable, and short enough to edit. */
function tensorsText(inputs: readonly RequestTensor[]): string {
  return `[\n${inputs.map((input) => `  ${JSON.stringify(input)}`).join(",\n")}\n]`;
}

function parseTensorsText(text: string): { ok: true; inputs: RequestTensor[] } | { ok: false; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `Not valid JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (!Array.isArray(value) || value.length === 0)
    return { ok: false, message: "Give a JSON array of input tensors { name, datatype, shape, data }." };
  return { ok: true, inputs: value as RequestTensor[] };
}

/**
 * The try-it request of a model or an operator, in one of two modes the
 * person switches between: a form per declared input (datatype, shape,
 * values), or the KServe v2 JSON tensors as text. Switching carries the
 * values over (a form with a problem, or JSON that does not parse, stays
 * put and says why). The caller sends the request and shows the answer.
 */
export function TryItForm({
  name,
  declared,
  initialMode,
  pending,
  onRun,
  onInvalid,
  fieldErrors = () => ({}),
  jsonError,
  alert,
  hint,
  extraFields,
  allowFiles = false,
  children,
}: {
  name: string;
  declared: readonly DeclaredInput[];
  initialMode: TryInputsMode;
  pending: boolean;
  onRun: (inputs: RequestTensor[]) => void;
  /** The inputs as typed cannot be sent (their problems are shown): a previous answer would read as this request's. */
  onInvalid?: () => void;
  /** The server's problems with the form's input at this index. */
  fieldErrors?: (index: number) => InputErrors;
  /** The server's problems with the inputs, shown under the JSON text. */
  jsonError?: string | undefined;
  alert?: string | undefined;
  hint?: string;
  extraFields?: ReactNode;
  /** BYTES inputs offer a file picker (only where the API sends base64 elements as binary data). */
  allowFiles?: boolean;
  children?: ReactNode;
}) {
  const id = useId();
  const [mode, setMode] = useState(initialMode);
  const [drafts, setDrafts] = useState(() => declared.map(draftOf));
  const [text, setText] = useState(() => tensorsText(readDrafts(declared.map(draftOf)).inputs));
  const [localErrors, setLocalErrors] = useState<InputErrors[]>([]);
  const [textError, setTextError] = useState<string | undefined>();

  const change = (index: number, patch: Partial<TryInputDraft>) =>
    setDrafts((current) =>
      current.map((draft, at) => {
        if (at !== index) return draft;
        const next = { ...draft, ...patch };
        // A new shape or datatype gets fresh values of the right length, unless the person typed their own
        // or the change brings its values (a .npy file's shape and data come together).
        if (
          patch.dataText === undefined &&
          (patch.shapeText !== undefined || patch.datatype !== undefined) &&
          draft.dataText === JSON.stringify(initialValues(draft.datatype, countOf(draft.shapeText)))
        ) {
          const shape = parseShape(next.shapeText);
          if (shape.ok) next.dataText = JSON.stringify(initialValues(next.datatype, elementCount(shape.value)));
        }
        return next;
      }),
    );

  const switchTo = (next: TryInputsMode) => {
    if (next === mode) return;
    if (next === "json") {
      const read = readDrafts(drafts);
      setLocalErrors(read.errors);
      if (!read.ok) return;
      setText(tensorsText(read.inputs));
    } else {
      const parsed = parseTensorsText(text);
      setTextError(parsed.ok ? undefined : parsed.message);
      if (!parsed.ok) return;
      setDrafts((current) =>
        current.map((draft) => {
          const tensor = parsed.inputs.find((input) => input?.name === draft.name);
          if (!tensor) return draft;
          return {
            ...draft,
            ...(typeof tensor.datatype === "string" ? { datatype: tensor.datatype } : {}),
            ...(Array.isArray(tensor.shape) ? { shapeText: formatShape(tensor.shape) } : {}),
            ...(Array.isArray(tensor.data) ? { dataText: JSON.stringify(tensor.data) } : {}),
          };
        }),
      );
    }
    setMode(next);
  };

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (mode === "form") {
      const read = readDrafts(drafts);
      setLocalErrors(read.errors);
      if (read.ok) onRun(read.inputs);
      else onInvalid?.();
      return;
    }
    const parsed = parseTensorsText(text);
    setTextError(parsed.ok ? undefined : parsed.message);
    if (parsed.ok) onRun(parsed.inputs);
    else onInvalid?.();
  };

  const shownTextError = textError ?? jsonError;
  return (
    <form onSubmit={submit} noValidate className="form try-it" aria-label={`Try ${name}`}>
      <fieldset className="segmented segmented-small">
        <legend>Inputs as</legend>
        <div className="segmented-options">
          {(["form", "json"] as const).map((option) => (
            <label key={option} className="segmented-option">
              <input
                type="radio"
                name={`${id}-mode`}
                value={option}
                checked={mode === option}
                onChange={() => switchTo(option)}
              />
              <span>{option === "form" ? "Form" : "JSON"}</span>
            </label>
          ))}
        </div>
      </fieldset>
      {hint ? <p className="field-hint">{hint}</p> : null}
      {mode === "form" ? (
        drafts.map((draft, index) => (
          <TryInputFields
            key={draft.name}
            input={draft}
            errors={{ ...fieldErrors(index), ...localErrors[index] }}
            onChange={(patch) => change(index, patch)}
            onFill={(kind) => {
              const shape = parseShape(draft.shapeText);
              if (!shape.ok) return setLocalErrors(errorsWith(localErrors, index, { shape: shape.message }));
              change(index, { dataText: JSON.stringify(fillValues(draft.datatype, elementCount(shape.value), kind)) });
            }}
            allowFile={allowFiles}
          />
        ))
      ) : (
        <div className="field">
          <label htmlFor={`${id}-inputs`}>Inputs (KServe v2 JSON tensors)</label>
          <textarea
            id={`${id}-inputs`}
            className="code-input"
            rows={Math.min(12, 3 + (text.match(/\n/g)?.length ?? 0))}
            value={text}
            onChange={(event) => setText(event.currentTarget.value)}
            spellCheck={false}
            aria-invalid={shownTextError ? true : undefined}
            aria-describedby={shownTextError ? `${id}-inputs-error` : undefined}
          />
          {shownTextError ? (
            <p id={`${id}-inputs-error`} className="field-error">
              {shownTextError}
            </p>
          ) : null}
        </div>
      )}
      {extraFields}
      <FormAlert message={alert} />
      <div className="form-actions">
        <SubmitButton pending={pending} label="Run" pendingLabel="Running…" />
      </div>
      {children}
    </form>
  );
}

function countOf(shapeText: string): number {
  const shape = parseShape(shapeText);
  return shape.ok ? elementCount(shape.value) : 0;
}

function errorsWith(current: readonly InputErrors[], index: number, errors: InputErrors): InputErrors[] {
  const next = [...current];
  next[index] = { ...next[index], ...errors };
  return next;
}

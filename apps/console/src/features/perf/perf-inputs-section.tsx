"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { SubmitButton } from "@/components/form/submit-button";
import { useFormProblem } from "@/components/form/use-form-problem";
import { QueryView } from "@/components/states/query-view";
import { TableScroller } from "@/components/table-scroller";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import type { RouterOutputs } from "@/lib/api-types";
import { useTRPC } from "@/lib/trpc";
import { bytesSampleJson, formatBytes, parseDims } from "./perf-inputs-values";

type PerfInputsView = RouterOutputs["perf"]["inputs"];
type DataChoice = "random" | "zero" | "json" | "bytes" | "keep";

/** The API's limit on a data file's JSON (PERF_INPUT_LIMITS.maxSampleBytes); a raw file grows by a third in base64. */
const MAX_SAMPLE_BYTES = 4 * 1024 * 1024;
const MAX_RAW_FILE_BYTES = Math.floor((MAX_SAMPLE_BYTES * 3) / 4) - 1024;

/**
 * "Perf inputs" of a model or operator page: what every perf run of it sends
 * (perf_analyzer's --shape and --input-data, which the console cannot pass as
 * flags). Each input with a variable dim gets a size, prefilled with the
 * suggestion runs use until someone saves one; the values are random, zero,
 * a data file in perf_analyzer's JSON format, or, for a BYTES input, an
 * uploaded image or text sent as that input. Saved per model; manual and
 * automatic runs and config searches use it.
 */
export function PerfInputsSection({
  kind,
  name,
  canEdit,
}: {
  kind: "MODEL" | "OPERATOR";
  name: string;
  canEdit: boolean;
}) {
  const trpc = useTRPC();
  const inputs = useQuery(trpc.perf.inputs.queryOptions({ kind, name }));
  return (
    <section className="card" aria-labelledby="perf-inputs-title">
      <h2 id="perf-inputs-title">Perf inputs</h2>
      <p className="muted">
        What perf runs of this {kind === "MODEL" ? "model" : "operator"} send: manual and automatic runs and config
        searches use it.
      </p>
      <QueryView query={inputs} loadingLabel="Loading the perf inputs…">
        {(data) => <PerfInputsForm key={data.updatedAt ?? "defaults"} view={data} canEdit={canEdit} />}
      </QueryView>
    </section>
  );
}

function PerfInputsForm({ view, canEdit }: { view: PerfInputsView; canEdit: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { problem, clear, fromError, atFields } = useFormProblem();
  const bytesInputs = view.inputs.filter((input) => input.datatype === "BYTES");
  const [choice, setChoice] = useState<DataChoice>(view.data.kind === "file" ? "keep" : view.data.kind);
  const [saved, setSaved] = useState(false);
  const save = useMutation(
    trpc.perf.setInputs.mutationOptions({
      onSuccess: async () => {
        setSaved(true);
        await queryClient.invalidateQueries({ queryKey: trpc.perf.inputs.pathKey() });
      },
      onError: fromError,
    }),
  );
  const variable = view.inputs.filter((input) => input.variable);
  const fields = [
    "shapes",
    "data",
    ...variable.map((input) => `shapes.${input.name}`),
    "target",
    "target.name",
    "target.kind",
  ];

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    setSaved(false);
    const form = new FormData(event.currentTarget);
    const problems: Array<{ path: string; message: string }> = [];
    const shapes: Record<string, number[]> = {};
    for (const input of variable) {
      const parsed = parseDims(String(form.get(`dims:${input.name}`) ?? ""), input.dims.length);
      if (parsed.ok) shapes[input.name] = parsed.dims;
      else problems.push({ path: `shapes.${input.name}`, message: parsed.message });
    }
    let data:
      | { kind: "random" }
      | { kind: "zero" }
      | { kind: "keep" }
      | { kind: "file"; name: string; json: string }
      | undefined;
    if (choice === "random" || choice === "zero" || choice === "keep") data = { kind: choice };
    else {
      const file = form.get("dataFile");
      if (!(file instanceof File) || file.size === 0) {
        problems.push({ path: "data", message: "choose a file" });
      } else if (choice === "json") {
        if (file.size > MAX_SAMPLE_BYTES)
          problems.push({
            path: "data",
            message: `${formatBytes(file.size)}: at most ${formatBytes(MAX_SAMPLE_BYTES)}`,
          });
        else data = { kind: "file", name: file.name, json: await file.text() };
      } else {
        const input = String(form.get("bytesInput") ?? bytesInputs[0]?.name ?? "");
        if (file.size > MAX_RAW_FILE_BYTES)
          problems.push({
            path: "data",
            message: `${formatBytes(file.size)}: at most ${formatBytes(MAX_RAW_FILE_BYTES)}`,
          });
        else
          data = {
            kind: "file",
            name: file.name,
            json: bytesSampleJson(input, new Uint8Array(await file.arrayBuffer())),
          };
      }
    }
    if (problems.length > 0 || data === undefined) return atFields(problems);
    save.mutate({ target: view.target, shapes, data });
  };

  const dataError = fieldMessage(problem, "data");
  return (
    <form onSubmit={(event) => void submit(event)} noValidate className="form" aria-label="Perf inputs">
      <TableScroller label="Inputs of perf runs">
        {/* Not a DataTable: a grid of form fields (one row an input to fill in), not a list of records to sort. */}
        <table>
          <caption>Inputs of perf runs</caption>
          <thead>
            <tr>
              <th scope="col">Input</th>
              <th scope="col">Datatype</th>
              <th scope="col">Declared shape</th>
              <th scope="col">Size in runs{view.maxBatchSize > 0 ? " (batch dimension excluded)" : ""}</th>
            </tr>
          </thead>
          <tbody>
            {view.inputs.map((input) => {
              const error = fieldMessage(problem, `shapes.${input.name}`);
              const id = `perf-dims-${input.name}`;
              return (
                <tr key={input.name}>
                  <th scope="row">
                    <code>{input.name}</code>
                  </th>
                  <td>{input.datatype}</td>
                  <td className="cell-nowrap">[{input.shape.join(", ")}]</td>
                  <td>
                    {input.variable ? (
                      <div className="field">
                        <label htmlFor={id} className="visually-hidden">
                          Size of {input.name}
                        </label>
                        <input
                          id={id}
                          name={`dims:${input.name}`}
                          defaultValue={input.dims.join(", ")}
                          disabled={!canEdit}
                          inputMode="numeric"
                          aria-invalid={error ? true : undefined}
                          aria-describedby={error ? `${id}-error` : `${id}-hint`}
                        />
                        {error ? (
                          <p id={`${id}-error`} className="field-error">
                            {error}
                          </p>
                        ) : (
                          <p id={`${id}-hint`} className="field-hint">
                            {input.suggested ? "Suggested; runs use it until you save one." : "Saved."}
                          </p>
                        )}
                      </div>
                    ) : (
                      <span className="cell-nowrap">[{input.dims.join(", ")}] (fixed)</span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </TableScroller>
      <fieldset className="field checkbox-group" aria-describedby={dataError ? "perf-data-error" : undefined}>
        <legend>Values</legend>
        <DataRadio value="random" choice={choice} onChoose={setChoice} disabled={!canEdit}>
          Random (floats in [0, 1), integers 0–127, BYTES random strings)
        </DataRadio>
        <DataRadio value="zero" choice={choice} onChoose={setChoice} disabled={!canEdit}>
          Zero
        </DataRadio>
        {view.data.kind === "file" ? (
          <DataRadio value="keep" choice={choice} onChoose={setChoice} disabled={!canEdit}>
            Saved file <code>{view.data.name}</code> ({formatBytes(view.data.bytes)}, {view.data.entries}{" "}
            {view.data.entries === 1 ? "request" : "requests"})
          </DataRadio>
        ) : null}
        <DataRadio value="json" choice={choice} onChoose={setChoice} disabled={!canEdit}>
          A data file: perf_analyzer&apos;s <code>--input-data</code> JSON (
          <code>{'{"data": [{"<input>": [...]}]}'}</code>)
        </DataRadio>
        {bytesInputs.length > 0 ? (
          <DataRadio value="bytes" choice={choice} onChoose={setChoice} disabled={!canEdit}>
            An image, text or other file, sent as a BYTES input
          </DataRadio>
        ) : null}
        {choice === "json" || choice === "bytes" ? (
          <div className="inline-inputs">
            {choice === "bytes" && bytesInputs.length > 1 ? (
              <div className="field">
                <label htmlFor="perf-bytes-input">BYTES input</label>
                <select id="perf-bytes-input" name="bytesInput">
                  {bytesInputs.map((input) => (
                    <option key={input.name} value={input.name}>
                      {input.name}
                    </option>
                  ))}
                </select>
              </div>
            ) : choice === "bytes" ? (
              <input type="hidden" name="bytesInput" value={bytesInputs[0]!.name} />
            ) : null}
            <div className="field">
              <label htmlFor="perf-data-file">{choice === "json" ? "Data file (JSON)" : "File"}</label>
              <input
                id="perf-data-file"
                name="dataFile"
                type="file"
                accept={choice === "json" ? "application/json,.json" : undefined}
                aria-invalid={dataError ? true : undefined}
              />
            </div>
          </div>
        ) : null}
        {dataError ? (
          <p id="perf-data-error" className="field-error">
            {dataError}
          </p>
        ) : null}
      </fieldset>
      <FormAlert message={formMessage(problem, fields)} />
      {canEdit ? (
        <div className="form-actions">
          <SubmitButton pending={save.isPending} label="Save perf inputs" pendingLabel="Saving…" />
          {saved ? (
            <span role="status" className="muted">
              Saved: the next run uses these inputs.
            </span>
          ) : null}
        </div>
      ) : (
        <p className="muted">
          Engineers who may change this {view.target.kind === "MODEL" ? "model" : "operator"} can change them.
        </p>
      )}
    </form>
  );
}

function DataRadio({
  value,
  choice,
  onChoose,
  disabled,
  children,
}: {
  value: DataChoice;
  choice: DataChoice;
  onChoose: (value: DataChoice) => void;
  disabled: boolean;
  children: React.ReactNode;
}) {
  return (
    <label className="checkbox">
      <input
        type="radio"
        name="dataKind"
        value={value}
        checked={choice === value}
        disabled={disabled}
        onChange={() => onChoose(value)}
      />
      <span>{children}</span>
    </label>
  );
}

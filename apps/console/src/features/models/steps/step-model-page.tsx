"use client";

import { useMutation, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useId, useState } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { TextField } from "@/components/form/text-field";
import { PageHeader } from "@/components/page-header";
import { RequireRole } from "@/components/shell/require-role";
import { QueryView } from "@/components/states/query-view";
import { apiProblem } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { modelHref } from "../models-table";
import { bytesToBase64 } from "../upload/base64";
import { useInvalidateModels } from "../use-invalidate-models";
import { type CatalogStep, freshId, pipelineOf, type StepDraft, suggestedTensors, tensorsOf } from "./step-drafts";

/**
 * Build a model from the built-in steps, without code: pick steps from the
 * palette (each with its documentation and typed ports), set their
 * parameters, name the model's tensors (suggested from the first and last
 * step), add the files steps read (labels, tokenizer.json), create. The API
 * checks the whole pipeline before anything is stored and names each
 * problem's step and field; the model then serves in a worker process and
 * operators call it like any model.
 */
export function StepModelPage() {
  return (
    <>
      <PageHeader title="Build a model from steps">
        <p>
          Decode, resize and normalize images, tokenize text, post-process tensors: Operon&apos;s built-in steps,
          chained into a model that runs in a worker process. <Link href="/models">Back to models</Link>
        </p>
      </PageHeader>
      <RequireRole role="ENGINEER">
        <StepModelForm />
      </RequireRole>
    </>
  );
}

function StepModelForm() {
  const trpc = useTRPC();
  const router = useRouter();
  const invalidate = useInvalidateModels();
  const catalog = useQuery(trpc.models.stepCatalog.queryOptions());
  const [name, setName] = useState("");
  const [steps, setSteps] = useState<StepDraft[]>([]);
  const [nextKey, setNextKey] = useState(1);
  const [inputsText, setInputsText] = useState("[]");
  const [outputsText, setOutputsText] = useState("[]");
  const [tensorsEdited, setTensorsEdited] = useState(false);
  const [files, setFiles] = useState<Array<{ path: string; data: string; sizeBytes: number }>>([]);
  const [localProblems, setLocalProblems] = useState<string[]>([]);
  const create = useMutation(
    trpc.models.createSteps.mutationOptions({
      onSuccess: (result) => {
        void invalidate();
        router.push(modelHref(result.name));
      },
    }),
  );
  const entries = (catalog.data ?? []) as CatalogStep[];

  const changeSteps = (next: StepDraft[]): void => {
    setSteps(next);
    if (!tensorsEdited) {
      const suggested = suggestedTensors(next, entries);
      setInputsText(JSON.stringify(suggested.inputs, null, 2));
      setOutputsText(JSON.stringify(suggested.outputs, null, 2));
    }
  };
  const add = (entry: CatalogStep): void => {
    changeSteps([
      ...steps,
      {
        key: nextKey,
        id: freshId(
          entry.name,
          steps.map((s) => s.id),
        ),
        step: entry.name,
        params: "{}",
      },
    ]);
    setNextKey(nextKey + 1);
  };

  const submit = async (): Promise<void> => {
    const pipeline = pipelineOf(steps);
    const inputs = tensorsOf(inputsText, "Inputs");
    const outputs = tensorsOf(outputsText, "Outputs");
    const problems = [
      ...(pipeline.ok ? [] : pipeline.problems),
      ...(inputs.ok ? [] : [inputs.problem]),
      ...(outputs.ok ? [] : [outputs.problem]),
    ];
    setLocalProblems(problems);
    if (!pipeline.ok || !inputs.ok || !outputs.ok) return;
    create.mutate({
      name,
      inputs: inputs.tensors as never,
      outputs: outputs.tensors as never,
      pipeline: pipeline.pipeline,
      files: files.map(({ path, data }) => ({ path, data })),
    });
  };

  const problem = create.isError ? apiProblem(create.error) : undefined;
  return (
    <QueryView query={catalog} loadingLabel="Loading the step library…" isEmpty={() => false}>
      {() => (
        <div className="step-model-layout">
          <section className="card" aria-labelledby="palette-title">
            <h2 id="palette-title">Step library</h2>
            {["image", "text", "tensor"].map((category) => (
              <div key={category}>
                <h3>{category === "image" ? "Images" : category === "text" ? "Text" : "Tensors"}</h3>
                <ul className="step-palette">
                  {entries
                    .filter((entry) => entry.category === category)
                    .map((entry) => (
                      <li key={entry.name}>
                        <details>
                          <summary>
                            <code>{entry.name}</code> {entry.title}
                          </summary>
                          <p>{entry.doc}</p>
                          <p>
                            In:{" "}
                            {entry.inputs
                              .map((p) => `${p.name} ${p.datatypes.join("|")} [${p.dims.join(", ")}]`)
                              .join("; ")}
                            <br />
                            Out:{" "}
                            {entry.outputs
                              .map((p) => `${p.name} ${p.datatypes.join("|")} [${p.dims.join(", ")}]`)
                              .join("; ")}
                          </p>
                        </details>
                        <button
                          type="button"
                          className="button"
                          aria-label={`Add ${entry.name}`}
                          onClick={() => add(entry)}
                        >
                          Add
                        </button>
                      </li>
                    ))}
                </ul>
              </div>
            ))}
          </section>
          <section className="card" aria-labelledby="pipeline-title">
            <h2 id="pipeline-title">New step model</h2>
            <form
              onSubmit={(event) => {
                event.preventDefault();
                void submit();
              }}
            >
              <TextField
                label="Name"
                name="name"
                value={name}
                required
                onChange={(event) => setName(event.target.value)}
                error={problem?.fieldErrors.find((e) => e.path === "name")?.message}
              />
              <h3>Steps, in order</h3>
              {steps.length === 0 ? <p>Add steps from the library.</p> : null}
              <ol className="step-list">
                {steps.map((draft, index) => (
                  <li key={draft.key}>
                    <StepParams
                      draft={draft}
                      onChange={(params) => changeSteps(steps.map((s) => (s.key === draft.key ? { ...s, params } : s)))}
                    />
                    <button
                      type="button"
                      className="button"
                      aria-label={`Remove step ${index + 1} (${draft.id})`}
                      onClick={() => changeSteps(steps.filter((s) => s.key !== draft.key))}
                    >
                      Remove
                    </button>
                  </li>
                ))}
              </ol>
              <JsonArea
                label="Inputs (JSON)"
                hint="The model's input tensors: [{ name, datatype, dims }], dims without the batch dimension."
                value={inputsText}
                onChange={(text) => {
                  setTensorsEdited(true);
                  setInputsText(text);
                }}
              />
              <JsonArea
                label="Outputs (JSON)"
                hint="The model's outputs, read by name from what the steps publish."
                value={outputsText}
                onChange={(text) => {
                  setTensorsEdited(true);
                  setOutputsText(text);
                }}
              />
              <FilesField files={files} onChange={setFiles} />
              {localProblems.length > 0 ? (
                <ul className="form-alert" role="alert">
                  {localProblems.map((text) => (
                    <li key={text}>{text}</li>
                  ))}
                </ul>
              ) : null}
              {problem ? (
                <>
                  <FormAlert
                    message={problem.fieldErrors.length > 0 ? "The step model was not created:" : problem.message}
                  />
                  {problem.fieldErrors.length > 0 ? (
                    <ul className="field-error" aria-label="Problems">
                      {problem.fieldErrors.map((e) => (
                        <li key={`${e.path}:${e.message}`}>
                          {e.path}: {e.message}
                        </li>
                      ))}
                    </ul>
                  ) : null}
                </>
              ) : null}
              <button type="submit" className="button button-primary" disabled={create.isPending}>
                {create.isPending ? "Creating…" : "Create step model"}
              </button>
            </form>
          </section>
        </div>
      )}
    </QueryView>
  );
}

function StepParams({ draft, onChange }: { draft: StepDraft; onChange: (params: string) => void }) {
  return (
    <JsonArea label={`Parameters of ${draft.id} (${draft.step})`} value={draft.params} rows={3} onChange={onChange} />
  );
}

function JsonArea({
  label,
  hint,
  value,
  rows = 6,
  onChange,
}: {
  label: string;
  hint?: string;
  value: string;
  rows?: number;
  onChange: (text: string) => void;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <textarea
        id={id}
        className="code-textarea"
        rows={rows}
        spellCheck={false}
        value={value}
        aria-describedby={hint ? `${id}-hint` : undefined}
        onChange={(event) => onChange(event.target.value)}
      />
      {hint ? (
        <p id={`${id}-hint`} className="field-hint">
          {hint}
        </p>
      ) : null}
    </div>
  );
}

function FilesField({
  files,
  onChange,
}: {
  files: Array<{ path: string; data: string; sizeBytes: number }>;
  onChange: (files: Array<{ path: string; data: string; sizeBytes: number }>) => void;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>Files the steps read (labels, tokenizer.json)</label>
      <input
        id={id}
        type="file"
        multiple
        onChange={async (event) => {
          const chosen = [...(event.target.files ?? [])];
          const read = await Promise.all(
            chosen.map(async (file) => ({
              path: file.name,
              data: bytesToBase64(new Uint8Array(await file.arrayBuffer())),
              sizeBytes: file.size,
            })),
          );
          onChange(read);
        }}
      />
      {files.length > 0 ? (
        <p className="field-hint">{files.map((file) => `${file.path} (${file.sizeBytes} bytes)`).join(", ")}</p>
      ) : null}
    </div>
  );
}

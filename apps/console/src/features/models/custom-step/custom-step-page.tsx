"use client";

import { useMutation, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useId, useState } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { TextField } from "@/components/form/text-field";
import { PageHeader } from "@/components/page-header";
import { RequireRole } from "@/components/shell/require-role";
import { useSignedInUser } from "@/components/shell/session-context";
import { hasRole } from "@/lib/roles";
import { apiProblem } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { modelHref } from "../models-table";
import { tensorsOf } from "../steps/step-drafts";
import { useInvalidateModels } from "../use-invalidate-models";
import { type ChosenFile, FilePicker } from "./file-picker";
import { StoredProblems } from "./stored-problems";

/**
 * Upload a custom step: a model.ts and the files it reads, with its tensors.
 * The API type-checks model.ts before anything is stored and lists each
 * problem at model.ts:line:col; the step then runs sandboxed (no files
 * outside its folder, no network, no processes, admin-set limits), and
 * operators call it like any model. Its page has the try-it panel.
 */
export function CustomStepPage() {
  return (
    <>
      <PageHeader title="Upload a custom step">
        <p>
          Your own TypeScript step: a <code>model.ts</code> whose default export is the TypeScript backend&apos;s class,
          and the files it reads. It runs sandboxed: it reads only its own folder, with no network, no processes and
          admin-set memory and CPU limits. <Link href="/models">Back to models</Link>
        </p>
      </PageHeader>
      <RequireRole role="ENGINEER">
        <CodeUploadNotice />
        <CustomStepForm />
      </RequireRole>
    </>
  );
}

/** Said before the form, not after a refused upload: an admin restricted code uploads to admins (Users page). */
function CodeUploadNotice() {
  const trpc = useTRPC();
  const user = useSignedInUser();
  const policy = useQuery(trpc.models.codeUploadPolicy.queryOptions());
  if (policy.data?.adminsOnly !== true) return null;
  return (
    <p className="notice" role="note">
      {hasRole(user.role, "ADMIN")
        ? "Only admins may upload code now (Users → Code uploads); engineers are refused."
        : "An admin has restricted uploading code (custom steps) to admins: your upload would be refused."}
    </p>
  );
}

function CustomStepForm() {
  const trpc = useTRPC();
  const router = useRouter();
  const invalidate = useInvalidateModels();
  const [name, setName] = useState("");
  const [source, setSource] = useState<ChosenFile[]>([]);
  const [files, setFiles] = useState<ChosenFile[]>([]);
  const [inputsText, setInputsText] = useState('[{ "name": "x", "datatype": "FP32", "dims": [4] }]');
  const [outputsText, setOutputsText] = useState('[{ "name": "y", "datatype": "FP32", "dims": [4] }]');
  const [localProblems, setLocalProblems] = useState<string[]>([]);
  // Checked as soon as model.ts is picked: its compile problems, and the tensors it declares fill the form.
  const inspect = useMutation(
    trpc.models.inspectCustomStep.mutationOptions({
      onSuccess: (result) => {
        if (result.signature === null) return;
        setInputsText(tensorsText(result.signature.inputs));
        setOutputsText(tensorsText(result.signature.outputs));
      },
    }),
  );
  const create = useMutation(
    trpc.models.createCustomStep.mutationOptions({
      onSuccess: (result) => {
        void invalidate();
        router.push(modelHref(result.name));
      },
    }),
  );

  const submit = (): void => {
    const inputs = tensorsOf(inputsText, "Inputs");
    const outputs = tensorsOf(outputsText, "Outputs");
    const problems = [
      ...(source.length === 0 ? ["Choose the step's model.ts."] : []),
      ...(inputs.ok ? [] : [inputs.problem]),
      ...(outputs.ok ? [] : [outputs.problem]),
    ];
    setLocalProblems(problems);
    if (problems.length > 0 || !inputs.ok || !outputs.ok) return;
    create.mutate({
      name,
      inputs: inputs.tensors as never,
      outputs: outputs.tensors as never,
      files: [...source, ...files].map(({ path, data }) => ({ path, data })),
    });
  };

  const problem = create.isError ? apiProblem(create.error) : undefined;
  return (
    <section className="card" aria-labelledby="custom-step-title">
      <h2 id="custom-step-title">New custom step</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          submit();
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
        <FilePicker
          label="Code (model.ts)"
          accept=".ts"
          files={source}
          onChange={(chosen) => {
            const picked = chosen.slice(0, 1).map((file) => ({ ...file, path: "model.ts" }));
            setSource(picked);
            if (picked.length > 0) inspect.mutate({ files: picked.map(({ path, data }) => ({ path, data })) });
          }}
        />
        <CodeCheck inspect={inspect} />
        <FilePicker label="Files it reads (labels, vocabularies)" multiple files={files} onChange={setFiles} />
        <JsonArea
          label="Inputs (JSON)"
          hint="The step's input tensors: [{ name, datatype, dims }], dims without the batch dimension."
          value={inputsText}
          onChange={setInputsText}
        />
        <JsonArea
          label="Outputs (JSON)"
          hint="The tensors its execute returns."
          value={outputsText}
          onChange={setOutputsText}
        />
        {localProblems.length > 0 ? (
          <ul className="form-alert" role="alert">
            {localProblems.map((text) => (
              <li key={text}>{text}</li>
            ))}
          </ul>
        ) : null}
        <StoredProblems problem={problem} notStored="The custom step was not stored:" />
        <button type="submit" className="button button-primary" disabled={create.isPending}>
          {create.isPending ? "Checking and storing…" : "Upload custom step"}
        </button>
      </form>
    </section>
  );
}

/** The tensors as the JSON fields show them, one per line. */
function tensorsText(tensors: ReadonlyArray<{ name: string; datatype: string; dims: number[] }>): string {
  return `[\n${tensors.map((t) => `  ${JSON.stringify({ name: t.name, datatype: t.datatype, dims: t.dims })}`).join(",\n")}\n]`;
}

/** What the check of the picked model.ts said: checking, its problems, or the tensors it declared (prefilled). */
function CodeCheck({
  inspect,
}: {
  inspect: {
    isPending: boolean;
    isError: boolean;
    error: unknown;
    data?: { problems: string[]; signature: unknown } | undefined;
  };
}) {
  if (inspect.isPending) return <p className="field-hint">Checking model.ts…</p>;
  if (inspect.isError) return <FormAlert message={apiProblem(inspect.error).message} />;
  const result = inspect.data;
  if (result === undefined) return null;
  return (
    <div role="status">
      {result.problems.length > 0 ? (
        <ul className="field-error" aria-label="model.ts problems">
          {result.problems.map((text) => (
            <li key={text}>
              <code>{text}</code>
            </li>
          ))}
        </ul>
      ) : (
        <p className="field-hint">model.ts compiles.</p>
      )}
      {result.signature !== null ? (
        <p className="field-hint">
          Inputs and outputs below are prefilled from its <code>operonSignature</code>.
        </p>
      ) : (
        <p className="field-hint">
          It declares no tensors (<code>export const operonSignature</code>): give them below.
        </p>
      )}
    </div>
  );
}

function JsonArea({
  label,
  hint,
  value,
  onChange,
}: {
  label: string;
  hint: string;
  value: string;
  onChange: (text: string) => void;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <textarea
        id={id}
        className="code-textarea"
        rows={4}
        spellCheck={false}
        value={value}
        aria-describedby={`${id}-hint`}
        onChange={(event) => onChange(event.target.value)}
      />
      <p id={`${id}-hint`} className="field-hint">
        {hint}
      </p>
    </div>
  );
}

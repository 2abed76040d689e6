"use client";

import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { apiProblem } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { useInvalidateModels } from "../use-invalidate-models";
import { type ChosenFile, FilePicker } from "./file-picker";
import { StoredProblems } from "./stored-problems";

/**
 * A custom step's next version, on its model page: a new model.ts and the
 * files it reads. The API type-checks it first (problems at
 * model.ts:line:col, nothing stored), then serves it in place of the
 * current version; its tensors and sandbox stay as uploaded. A version the
 * gateway refuses is removed and the current one keeps serving, as the
 * message says.
 */
export function CustomStepVersionForm({ name }: { name: string }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateModels();
  const [source, setSource] = useState<ChosenFile[]>([]);
  const [files, setFiles] = useState<ChosenFile[]>([]);
  const [missingCode, setMissingCode] = useState(false);
  const add = useMutation(
    trpc.models.addCustomStepVersion.mutationOptions({
      onSuccess: () => {
        setSource([]);
        setFiles([]);
        void invalidate();
      },
    }),
  );
  const problem = add.isError ? apiProblem(add.error) : undefined;
  return (
    <section className="card" aria-labelledby="step-version-title">
      <h2 id="step-version-title">New version</h2>
      <p className="muted">
        Upload the step&apos;s next <code>model.ts</code> and the files it reads; it serves in place of the current
        version once it compiles and loads. Its inputs, outputs and sandbox stay as they are.
      </p>
      <form
        aria-label={`New version of ${name}`}
        onSubmit={(event) => {
          event.preventDefault();
          setMissingCode(source.length === 0);
          if (source.length === 0) return;
          add.mutate({ name, files: [...source, ...files].map(({ path, data }) => ({ path, data })) });
        }}
      >
        <FilePicker
          label="New code (model.ts)"
          accept=".ts"
          files={source}
          onChange={(chosen) => setSource(chosen.slice(0, 1).map((file) => ({ ...file, path: "model.ts" })))}
        />
        <FilePicker label="Files the new version reads" multiple files={files} onChange={setFiles} />
        {missingCode ? <FormAlert message="Choose the new version's model.ts." /> : null}
        <StoredProblems problem={problem} notStored="The new version was not stored:" />
        {add.isSuccess ? (
          <p role="status">
            Version {add.data.version} is {add.data.state}.
          </p>
        ) : null}
        <button type="submit" className="button button-primary" disabled={add.isPending}>
          {add.isPending ? "Checking and storing…" : "Upload new version"}
        </button>
      </form>
    </section>
  );
}

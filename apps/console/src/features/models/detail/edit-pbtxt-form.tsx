"use client";

import { useMutation } from "@tanstack/react-query";
import { type ChangeEvent, type FormEvent, useId, useMemo, useState } from "react";
import { pbtxtLanguage } from "@/components/code-editor/pbtxt-language";
import { TextCodeEditor } from "@/components/code-editor/text-code-editor";
import { FormAlert } from "@/components/form/form-alert";
import { SubmitButton } from "@/components/form/submit-button";
import { apiProblem } from "@/lib/api-problem";
import { formatBytes } from "@/lib/number-format";
import { useTRPC } from "@/lib/trpc";
import { useInvalidateModels } from "../use-invalidate-models";

/** The API's limit on config.pbtxt text (MAX_CONFIG_PBTXT_CHARS). */
const MAX_PBTXT_BYTES = 256 * 1024;

/**
 * config.pbtxt as Triton users write it, in the code editor, saved with models.updateConfig({ configPbtxt }): the API
 * parses it (a syntax problem names its line and column), checks it against the model file and reloads the model.
 * A config.pbtxt file from disk can be loaded into the editor first. Every problem the API names shows at once.
 */
export function EditPbtxtForm({
  name,
  text,
  onDone,
}: {
  name: string;
  text: string;
  onDone: (saved: boolean) => void;
}) {
  const trpc = useTRPC();
  const id = useId();
  const invalidate = useInvalidateModels();
  const [draft, setDraft] = useState(text);
  const [fileProblem, setFileProblem] = useState<string | undefined>();
  const language = useMemo(() => pbtxtLanguage(), []);
  const update = useMutation(
    trpc.models.updateConfig.mutationOptions({
      onSuccess: async () => {
        await invalidate();
        onDone(true);
      },
    }),
  );
  const problem = update.isError ? apiProblem(update.error) : null;
  const problems = problem?.fieldErrors.map((field) =>
    field.path && field.path !== "configPbtxt" ? `${field.path}: ${field.message}` : field.message,
  );

  const load = async (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.currentTarget.files?.[0];
    event.currentTarget.value = "";
    if (file === undefined) return;
    if (file.size > MAX_PBTXT_BYTES)
      return setFileProblem(`${file.name} is ${formatBytes(file.size)}; a config.pbtxt is at most 256 KiB`);
    setFileProblem(undefined);
    update.reset();
    setDraft(await file.text());
  };

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    update.mutate({ name, configPbtxt: draft });
  };

  const errorId = `${id}-error`;
  return (
    <form onSubmit={submit} noValidate className="form" aria-label="Edit config.pbtxt">
      <div className="field">
        <label htmlFor={`${id}-file`}>Load a config.pbtxt file (replaces the text below)</label>
        <input
          id={`${id}-file`}
          type="file"
          accept=".pbtxt,.txt,text/plain"
          aria-invalid={fileProblem ? true : undefined}
          aria-describedby={fileProblem ? `${id}-file-error` : undefined}
          onChange={(event) => void load(event)}
        />
        {fileProblem ? (
          <p id={`${id}-file-error`} className="field-error">
            {fileProblem}
          </p>
        ) : null}
      </div>
      <div className="field">
        <span id={`${id}-label`} className="field-label">
          config.pbtxt
        </span>
        <TextCodeEditor
          id={`${id}-editor`}
          name="configPbtxt"
          value={draft}
          onChange={setDraft}
          labelledBy={`${id}-label`}
          describedBy={problems && problems.length > 0 ? errorId : undefined}
          invalid={(problems?.length ?? 0) > 0}
          language={language}
        />
        {problems && problems.length > 0 ? (
          <ul id={errorId} className="field-error field-error-list">
            {problems.map((message) => (
              <li key={message}>{message}</li>
            ))}
          </ul>
        ) : null}
      </div>
      <FormAlert message={problem && problem.fieldErrors.length === 0 ? problem.message : undefined} />
      <div className="form-actions">
        <SubmitButton pending={update.isPending} label="Save config.pbtxt" pendingLabel="Saving and reloading…" />
        <button type="button" className="button" disabled={update.isPending} onClick={() => onDone(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

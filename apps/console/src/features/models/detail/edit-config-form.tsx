"use client";

import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { apiProblem } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { useInvalidateModels } from "../use-invalidate-models";
import type { ConfigDraft } from "../upload/config-draft";
import { JsonConfigField } from "../upload/json-config-field";
import { useLocalErrors } from "../upload/use-local-errors";
import { SubmitButton } from "@/components/form/submit-button";

/**
 * The config as JSON, saved with models.updateConfig: the API checks it
 * against the model file and reloads the model; what it objects to shows at
 * the field, each problem with its path ("input[0].dims: …").
 */
export function EditConfigForm({
  name,
  config,
  onDone,
}: {
  name: string;
  config: ConfigDraft;
  onDone: (saved: boolean) => void;
}) {
  const trpc = useTRPC();
  const invalidate = useInvalidateModels();
  const [draft, setDraft] = useState<ConfigDraft>(config);
  const { hasErrors, reporter } = useLocalErrors();
  const update = useMutation(
    trpc.models.updateConfig.mutationOptions({
      onSuccess: async () => {
        await invalidate();
        onDone(true);
      },
    }),
  );
  const problem = update.isError ? apiProblem(update.error) : null;
  const atField = problem?.fieldErrors
    .map((field) => (field.path ? `${field.path}: ${field.message}` : field.message))
    .join("; ");

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (!hasErrors) update.mutate({ name, config: draft });
  };

  return (
    <form onSubmit={submit} noValidate className="form" aria-label="Edit the config">
      <JsonConfigField
        label="Config (JSON)"
        draft={draft}
        onChange={setDraft}
        onValidity={reporter("json")}
        error={atField || undefined}
        rows={22}
      />
      <FormAlert message={problem && problem.fieldErrors.length === 0 ? problem.message : undefined} />
      <div className="form-actions">
        <SubmitButton
          pending={update.isPending}
          label="Save config"
          pendingLabel="Saving and reloading…"
          disabled={hasErrors}
        />
        <button type="button" className="button" disabled={update.isPending} onClick={() => onDone(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

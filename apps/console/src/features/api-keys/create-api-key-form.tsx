"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { CheckboxGroup, type CheckboxOption } from "@/components/form/checkbox-group";
import { FormAlert } from "@/components/form/form-alert";
import { TextField } from "@/components/form/text-field";
import { useSignedInUser } from "@/components/shell/session-context";
import { useFormProblem } from "@/components/form/use-form-problem";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import type { RouterOutputs } from "@/lib/api-types";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { parseApiKeyForm } from "./api-key-form-values";
import { SubmitButton } from "@/components/form/submit-button";

export type CreatedApiKey = RouterOutputs["apiKeys"]["create"];

const FIELDS = ["name", "scopes", "expiresAt", "priorityLevel", "qpsQuota"];

const INFER_SCOPE: CheckboxOption = { value: "infer", label: "infer", hint: "inference and model metadata" };
const ADMIN_SCOPE: CheckboxOption = { value: "admin", label: "admin", hint: "also load, unload and upload models" };

export function CreateApiKeyForm({ onCreated }: { onCreated: (created: CreatedApiKey) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const user = useSignedInUser();
  const { problem, clear, fromError, atFields } = useFormProblem();
  const create = useMutation(
    trpc.apiKeys.create.mutationOptions({
      onSuccess: async (created) => {
        onCreated(created);
        await queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.pathKey() });
      },
      onError: fromError,
    }),
  );
  const scopes = hasRole(user.role, "ADMIN") ? [INFER_SCOPE, ADMIN_SCOPE] : [INFER_SCOPE];

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const formElement = event.currentTarget;
    const parsed = parseApiKeyForm(new FormData(formElement));
    if (!parsed.ok) {
      atFields(parsed.fieldErrors);
      return;
    }
    create.mutate(parsed.input, { onSuccess: () => formElement.reset() });
  };

  return (
    <form onSubmit={submit} noValidate className="form form-grid" aria-labelledby="create-key-title">
      <h2 id="create-key-title" className="form-title">
        Create a key
      </h2>
      <TextField
        label="Name"
        name="name"
        required
        maxLength={100}
        hint="What uses it, e.g. “ci” or “billing service”."
        error={fieldMessage(problem, "name")}
      />
      <CheckboxGroup
        legend="Scopes"
        name="scopes"
        options={scopes}
        defaultChecked={["infer"]}
        error={fieldMessage(problem, "scopes")}
      />
      <TextField
        label="Expires on (optional)"
        name="expiresOn"
        type="date"
        hint="Empty: never expires."
        error={fieldMessage(problem, "expiresAt")}
      />
      <TextField
        label="Priority level (optional)"
        name="priorityLevel"
        type="number"
        min={0}
        step={1}
        inputMode="numeric"
        hint="0 or empty: the model's default; 1 is the highest."
        error={fieldMessage(problem, "priorityLevel")}
      />
      <TextField
        label="QPS quota (optional)"
        name="qpsQuota"
        type="number"
        min={1}
        step={1}
        inputMode="numeric"
        hint="Requests per second; empty: no quota."
        error={fieldMessage(problem, "qpsQuota")}
      />
      <FormAlert message={formMessage(problem, FIELDS)} />
      <div className="form-actions">
        <SubmitButton pending={create.isPending} label="Create key" pendingLabel="Creating…" />
      </div>
    </form>
  );
}

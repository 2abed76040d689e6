"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { SelectField } from "@/components/form/select-field";
import { TextField } from "@/components/form/text-field";
import { useFormProblem } from "@/components/form/use-form-problem";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import type { Role } from "@/lib/api-types";
import { useTRPC } from "@/lib/trpc";
import { ROLE_OPTIONS } from "./role-options";
import { SubmitButton } from "@/components/form/submit-button";

const FIELDS = ["email", "name", "role", "password"];

/** Creates an account with an initial password the admin passes on (Operon sends no email). */
export function CreateUserForm() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { problem, clear, fromError } = useFormProblem();
  const [createdEmail, setCreatedEmail] = useState<string | null>(null);
  const create = useMutation(
    trpc.users.create.mutationOptions({
      onSuccess: async (user) => {
        setCreatedEmail(user.email);
        await queryClient.invalidateQueries({ queryKey: trpc.users.list.queryKey() });
      },
      onError: fromError,
    }),
  );

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    setCreatedEmail(null);
    const formElement = event.currentTarget;
    const form = new FormData(formElement);
    const name = String(form.get("name") ?? "").trim();
    create.mutate(
      {
        email: String(form.get("email") ?? ""),
        ...(name ? { name } : {}),
        role: String(form.get("role")) as Role,
        password: String(form.get("password") ?? ""),
      },
      { onSuccess: () => formElement.reset() },
    );
  };

  return (
    <form onSubmit={submit} noValidate className="form form-grid" aria-labelledby="create-user-title">
      <h2 id="create-user-title" className="form-title">
        Add a user
      </h2>
      <TextField
        label="Email"
        name="email"
        type="email"
        autoComplete="off"
        required
        error={fieldMessage(problem, "email")}
      />
      <TextField label="Name (optional)" name="name" autoComplete="off" error={fieldMessage(problem, "name")} />
      <SelectField
        label="Role"
        name="role"
        options={ROLE_OPTIONS}
        defaultValue="VIEWER"
        error={fieldMessage(problem, "role")}
      />
      <TextField
        label="Initial password"
        name="password"
        type="password"
        autoComplete="new-password"
        required
        hint="At least 10 characters. Pass it on to them yourself."
        error={fieldMessage(problem, "password")}
      />
      <FormAlert message={formMessage(problem, FIELDS)} />
      {createdEmail ? (
        <p className="form-success" role="status">
          Created {createdEmail}.
        </p>
      ) : null}
      <div className="form-actions">
        <SubmitButton pending={create.isPending} label="Create user" pendingLabel="Creating…" />
      </div>
    </form>
  );
}

"use client";

import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { TextField } from "@/components/form/text-field";
import { useFormProblem } from "@/components/form/use-form-problem";
import { fieldChecks, required } from "@/components/form/field-checks";
import { newPasswordChecks } from "@/components/form/password-checks";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { SubmitButton } from "@/components/form/submit-button";

const FIELDS = ["currentPassword", "newPassword", "confirmPassword"];

/** Changes the signed-in user's password; the API signs out their other sessions and says how many. */
export function ChangePasswordForm() {
  const trpc = useTRPC();
  const { problem, clear, fromError, atFields } = useFormProblem();
  const [done, setDone] = useState<string | null>(null);
  const change = useMutation(trpc.auth.changePassword.mutationOptions({ onError: fromError }));

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    setDone(null);
    const formElement = event.currentTarget;
    const form = new FormData(formElement);
    const currentPassword = String(form.get("currentPassword") ?? "");
    const newPassword = String(form.get("newPassword") ?? "");
    const found = fieldChecks([
      ["currentPassword", required(currentPassword)],
      ...newPasswordChecks(
        { password: newPassword, confirmPassword: String(form.get("confirmPassword") ?? "") },
        { password: "newPassword", confirmPassword: "confirmPassword" },
        "does not match the new password",
      ),
    ]);
    if (found.length > 0) {
      atFields(found);
      return;
    }
    change.mutate(
      { currentPassword, newPassword },
      {
        onSuccess: ({ otherSessionsSignedOut }) => {
          formElement.reset();
          setDone(
            otherSessionsSignedOut === 0
              ? "Password changed."
              : `Password changed. ${otherSessionsSignedOut} other ${otherSessionsSignedOut === 1 ? "session was" : "sessions were"} signed out.`,
          );
        },
      },
    );
  };

  return (
    <form onSubmit={submit} noValidate className="form form-grid" aria-labelledby="change-password-title">
      <h2 id="change-password-title" className="form-title">
        Change password
      </h2>
      <TextField
        label="Current password"
        name="currentPassword"
        type="password"
        autoComplete="current-password"
        required
        error={fieldMessage(problem, "currentPassword")}
      />
      <TextField
        label="New password"
        name="newPassword"
        type="password"
        autoComplete="new-password"
        required
        hint="At least 10 characters. Your other sessions are signed out."
        error={fieldMessage(problem, "newPassword")}
      />
      <TextField
        label="New password, again"
        name="confirmPassword"
        type="password"
        autoComplete="new-password"
        required
        error={fieldMessage(problem, "confirmPassword")}
      />
      <FormAlert message={formMessage(problem, FIELDS)} />
      {done ? (
        <p className="form-success" role="status">
          {done}
        </p>
      ) : null}
      <div className="form-actions">
        <SubmitButton pending={change.isPending} label="Change password" pendingLabel="Changing…" />
      </div>
    </form>
  );
}

"use client";

import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { ConfirmButton } from "@/components/confirm-button";
import { TextField } from "@/components/form/text-field";
import { useTRPC } from "@/lib/trpc";

/**
 * Sets a new password for someone who forgot theirs (Operon sends no email:
 * the admin passes it on). Asks first, in a dialog with the new password;
 * the API's refusal (too short) stays in the dialog.
 */
export function ResetPasswordButton({ id, email }: { id: string; email: string }) {
  const trpc = useTRPC();
  const [password, setPassword] = useState("");
  const reset = useMutation(trpc.users.resetPassword.mutationOptions({ onSuccess: () => setPassword("") }));
  return (
    <ConfirmButton
      label="Reset password"
      accessibleLabel={`Reset password of ${email}`}
      className="button"
      title={`Reset the password of ${email}?`}
      description={
        <>
          <p>They are signed out everywhere and sign in again with this password, which you pass on to them.</p>
          <TextField
            label="New password"
            name="password"
            type="password"
            autoComplete="new-password"
            hint="At least 10 characters."
            value={password}
            onChange={(event) => setPassword(event.currentTarget.value)}
          />
        </>
      }
      confirmLabel="Reset password"
      onConfirm={() => reset.mutateAsync({ id, password })}
    />
  );
}

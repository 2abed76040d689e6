"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ConfirmButton } from "@/components/confirm-button";
import { apiProblem } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";

/** Disable (asks first: it signs the user out and stops their API keys) or enable an account. */
export function UserAccessButton({ id, email, disabled }: { id: string; email: string; disabled: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const setDisabled = useMutation(
    trpc.users.setDisabled.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.users.list.queryKey() }),
    }),
  );
  if (disabled) {
    return (
      <div className="inline-field">
        <button
          type="button"
          className="button"
          aria-label={`Enable ${email}`}
          disabled={setDisabled.isPending}
          onClick={() => setDisabled.mutate({ id, disabled: false })}
        >
          Enable
        </button>
        {setDisabled.isError ? (
          <p className="field-error" role="alert">
            {apiProblem(setDisabled.error).message}
          </p>
        ) : null}
      </div>
    );
  }
  return (
    <ConfirmButton
      label="Disable"
      accessibleLabel={`Disable ${email}`}
      title={`Disable ${email}?`}
      description={
        <p>They are signed out everywhere and their API keys stop working until an admin enables the account again.</p>
      }
      confirmLabel="Disable account"
      onConfirm={() => setDisabled.mutateAsync({ id, disabled: true })}
    />
  );
}

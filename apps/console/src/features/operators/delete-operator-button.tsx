"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ConfirmButton } from "@/components/confirm-button";
import { useTRPC } from "@/lib/trpc";

/** Deletes a stored operator and all its versions, after asking. */
export function DeleteOperatorButton({ name, onDeleted }: { name: string; onDeleted?: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const remove = useMutation(
    trpc.operators.delete.mutationOptions({
      onSuccess: async () => {
        onDeleted?.();
        await queryClient.invalidateQueries({ queryKey: trpc.operators.list.queryKey() });
      },
    }),
  );
  return (
    <ConfirmButton
      label="Delete"
      accessibleLabel={`Delete operator ${name}`}
      title={`Delete operator “${name}”?`}
      description={
        <p>
          The gateway stops serving <code>{name}</code> at once and every stored version of its spec is deleted. Clients
          calling it get 404. This cannot be undone.
        </p>
      }
      confirmLabel="Delete operator"
      onConfirm={() => remove.mutateAsync({ name })}
    />
  );
}

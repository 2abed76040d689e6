"use client";

import { useMutation } from "@tanstack/react-query";
import { ConfirmButton } from "@/components/confirm-button";
import { useTRPC } from "@/lib/trpc";
import { useInvalidateModels } from "./use-invalidate-models";

/** Uploaded models only (the API refuses repository models). */
export function DeleteModelButton({ name, onDeleted }: { name: string; onDeleted?: () => void }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateModels();
  const remove = useMutation(trpc.models.delete.mutationOptions());
  return (
    <ConfirmButton
      label="Delete"
      accessibleLabel={`Delete ${name}`}
      title={`Delete ${name}?`}
      description={
        <p>It is unloaded, and every uploaded version of it is removed with its files. This cannot be undone.</p>
      }
      confirmLabel="Delete model"
      onConfirm={async () => {
        await remove.mutateAsync({ name });
        onDeleted?.();
        await invalidate();
      }}
    />
  );
}

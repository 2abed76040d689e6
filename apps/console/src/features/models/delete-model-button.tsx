"use client";

import { useMutation } from "@tanstack/react-query";
import { ConfirmButton } from "@/components/confirm-button";
import { useTRPC } from "@/lib/trpc";
import { useInvalidateModels } from "./use-invalidate-models";

/** Uploaded models only (the API refuses repository models). */
export function DeleteModelButton({
  name,
  usedBy = [],
  onDeleted,
}: {
  name: string;
  /** Operators that call this model: the dialog says so before the API refuses (issue 27, item 4). */
  usedBy?: readonly string[];
  onDeleted?: () => void;
}) {
  const trpc = useTRPC();
  const invalidate = useInvalidateModels();
  const remove = useMutation(trpc.models.delete.mutationOptions());
  return (
    <ConfirmButton
      label="Delete"
      accessibleLabel={`Delete ${name}`}
      title={`Delete ${name}?`}
      description={
        usedBy.length > 0 ? (
          <p>
            It is used by {usedBy.length === 1 ? "operator" : "operators"} {usedBy.join(", ")}, so it cannot be deleted:
            change {usedBy.length === 1 ? "that operator" : "those operators"} to use another model, or delete{" "}
            {usedBy.length === 1 ? "it" : "them"}, first.
          </p>
        ) : (
          <p>It is unloaded, and every uploaded version of it is removed with its files. This cannot be undone.</p>
        )
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

"use client";

import { useMutation } from "@tanstack/react-query";
import { ConfirmButton } from "@/components/confirm-button";
import { useTRPC } from "@/lib/trpc";
import { useInvalidateModels } from "./use-invalidate-models";

export function UnloadModelButton({ name }: { name: string }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateModels();
  const unload = useMutation(trpc.models.unload.mutationOptions({ onSettled: invalidate }));
  return (
    <ConfirmButton
      label="Unload"
      accessibleLabel={`Unload ${name}`}
      title={`Unload ${name}?`}
      description={<p>The gateway stops serving it: requests for it fail until it is loaded again. Its files stay.</p>}
      confirmLabel="Unload model"
      className="button"
      onConfirm={() => unload.mutateAsync({ name })}
    />
  );
}

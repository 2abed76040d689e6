"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ConfirmButton } from "@/components/confirm-button";
import { useTRPC } from "@/lib/trpc";
import { keyLabel } from "./key-label";

export function RevokeApiKeyButton({ id, name, prefix }: { id: string; name: string; prefix: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const revoke = useMutation(
    trpc.apiKeys.revoke.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.pathKey() }),
    }),
  );
  return (
    <ConfirmButton
      label="Revoke"
      accessibleLabel={`Revoke key ${name}`}
      title={`Revoke key “${name}”?`}
      description={
        <p>
          Clients using <code>{keyLabel(prefix)}</code> will be refused from now on. This cannot be undone.
        </p>
      }
      confirmLabel="Revoke key"
      onConfirm={() => revoke.mutateAsync({ id })}
    />
  );
}

"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ConfirmButton } from "@/components/confirm-button";
import { apiProblem } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import type { HardwareProfile } from "./profile-types";

/** Edit, make default, delete (asks first; the API refuses the default while others exist). */
export function ProfileActions({ profile, onEdit }: { profile: HardwareProfile; onEdit: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.hardware.list.queryKey() });
  const setDefault = useMutation(trpc.hardware.setDefault.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.hardware.delete.mutationOptions({ onSuccess: refresh }));
  return (
    <div className="inline-field">
      <div className="model-actions">
        <button type="button" className="button" aria-label={`Edit ${profile.name}`} onClick={onEdit}>
          Edit
        </button>
        {profile.isDefault ? null : (
          <button
            type="button"
            className="button"
            aria-label={`Make ${profile.name} the default`}
            disabled={setDefault.isPending}
            onClick={() => setDefault.mutate({ id: profile.id })}
          >
            Make default
          </button>
        )}
        <ConfirmButton
          label="Delete"
          accessibleLabel={`Delete ${profile.name}`}
          title={`Delete “${profile.name}”?`}
          description={<p>Usage already costed with it keeps its cost; new samples use the default profile.</p>}
          confirmLabel="Delete profile"
          onConfirm={() => remove.mutateAsync({ id: profile.id })}
        />
      </div>
      {setDefault.isError ? (
        <p className="field-error" role="alert">
          {apiProblem(setDefault.error).message}
        </p>
      ) : null}
    </div>
  );
}

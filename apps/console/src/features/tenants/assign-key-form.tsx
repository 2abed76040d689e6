"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { SelectField } from "@/components/form/select-field";
import { SubmitButton } from "@/components/form/submit-button";
import { useFormProblem } from "@/components/form/use-form-problem";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import type { Tenant } from "./tenant-types";

const OWNER = "owner";

/** Puts an API key in a tenant group, or back with its owner. */
export function AssignKeyForm({ tenants }: { tenants: readonly Tenant[] }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const keys = useQuery(trpc.apiKeys.list.queryOptions({ all: true, includeRevoked: false }));
  const { problem, clear, fromError } = useFormProblem();
  const [done, setDone] = useState<string | null>(null);
  const assign = useMutation(
    trpc.tenants.assignKey.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries({ queryKey: trpc.tenants.list.queryKey() });
        await queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.queryKey() });
      },
      onError: fromError,
    }),
  );
  const groups = tenants.filter((tenant) => tenant.kind === "group");
  if (groups.length === 0) return <p className="muted">Add a tenant first; then put keys in it here.</p>;
  const keyOptions = (keys.data ?? []).map((key) => ({
    value: key.id,
    label: `${key.name} (opk_${key.prefix}…, ${key.ownerEmail ?? "unknown owner"})`,
  }));
  if (keys.isSuccess && keyOptions.length === 0)
    return <p className="muted">No API keys yet: create one on the API keys page.</p>;
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    setDone(null);
    const form = new FormData(event.currentTarget);
    const keyId = String(form.get("keyId") ?? "");
    const tenantId = String(form.get("tenantId") ?? OWNER);
    const keyLabel = keyOptions.find((option) => option.value === keyId)?.label ?? keyId;
    const tenantLabel =
      tenantId === OWNER ? "its owner" : (groups.find((group) => group.id === tenantId)?.name ?? tenantId);
    assign.mutate(
      { keyId, tenantId: tenantId === OWNER ? null : tenantId },
      { onSuccess: () => setDone(`${keyLabel} now counts for ${tenantLabel}.`) },
    );
  };
  return (
    <form onSubmit={submit} noValidate className="form form-grid" aria-label="Assign a key to a tenant">
      <SelectField label="API key" name="keyId" options={keyOptions} error={fieldMessage(problem, "keyId")} />
      <SelectField
        label="Tenant"
        name="tenantId"
        options={[
          ...groups.map((group) => ({ value: group.id, label: group.name })),
          { value: OWNER, label: "None: the key's owner" },
        ]}
        error={fieldMessage(problem, "tenantId")}
      />
      <FormAlert message={formMessage(problem, ["keyId", "tenantId"])} />
      {done ? (
        <p role="status" className="muted">
          {done}
        </p>
      ) : null}
      <div className="form-actions">
        <SubmitButton pending={assign.isPending} label="Assign key" pendingLabel="Assigning…" />
      </div>
    </form>
  );
}

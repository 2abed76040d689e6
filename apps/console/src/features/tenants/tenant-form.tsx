"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { SelectField } from "@/components/form/select-field";
import { SubmitButton } from "@/components/form/submit-button";
import { TextField } from "@/components/form/text-field";
import { useFormProblem } from "@/components/form/use-form-problem";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import type { Tenant } from "./tenant-types";

const FIELDS = ["name", "description", "share", "policy"];
const POLICIES = [
  { value: "QUEUE", label: "Queue: wait behind tenants within their share" },
  { value: "REFUSE", label: "Refuse: 429 with Retry-After" },
];

/** Creates a tenant group, or edits `tenant`. Admins only (the API checks too). */
export function TenantForm({ tenant, onDone }: { tenant?: Tenant; onDone: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { problem, clear, fromError, atFields } = useFormProblem();
  const onSuccess = async () => {
    await queryClient.invalidateQueries({ queryKey: trpc.tenants.list.queryKey() });
    onDone();
  };
  const create = useMutation(trpc.tenants.create.mutationOptions({ onSuccess, onError: fromError }));
  const update = useMutation(trpc.tenants.update.mutationOptions({ onSuccess, onError: fromError }));
  const pending = create.isPending || update.isPending;
  const title = tenant ? `Edit “${tenant.name}”` : "Add a tenant";

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const form = new FormData(event.currentTarget);
    const name = String(form.get("name") ?? "").trim();
    const description = String(form.get("description") ?? "").trim();
    const shareText = String(form.get("share") ?? "").trim();
    const share = Number(shareText);
    const policy = String(form.get("policy")) === "REFUSE" ? ("REFUSE" as const) : ("QUEUE" as const);
    const errors = [
      ...(name === "" ? [{ path: "name", message: "required" }] : []),
      ...(shareText === "" || !Number.isFinite(share) || share < 0.001 || share > 1000
        ? [{ path: "share", message: "a number from 0.001 to 1000, e.g. 2" }]
        : []),
    ];
    if (errors.length > 0) {
      atFields(errors);
      return;
    }
    if (tenant) update.mutate({ id: tenant.id, name, description, share, policy });
    else create.mutate({ name, description, share, policy });
  };

  return (
    <form onSubmit={submit} noValidate className="form form-grid" aria-label={title}>
      <h3 className="form-title">{title}</h3>
      <TextField
        label="Name"
        name="name"
        defaultValue={tenant?.name ?? ""}
        required
        maxLength={100}
        autoComplete="off"
        error={fieldMessage(problem, "name")}
      />
      <TextField
        label="Share"
        name="share"
        type="number"
        min={0}
        step="any"
        inputMode="decimal"
        defaultValue={tenant ? String(tenant.share) : "1"}
        required
        hint="A weight: a tenant with 2 gets twice what one with 1 gets while a model is busy."
        error={fieldMessage(problem, "share")}
      />
      <SelectField
        label="Over its share"
        name="policy"
        options={POLICIES}
        defaultValue={tenant?.policy ?? "QUEUE"}
        error={fieldMessage(problem, "policy")}
      />
      <TextField
        label="Description (optional)"
        name="description"
        defaultValue={tenant?.description ?? ""}
        maxLength={500}
        autoComplete="off"
        error={fieldMessage(problem, "description")}
      />
      <FormAlert message={formMessage(problem, FIELDS)} />
      <div className="form-actions">
        <SubmitButton pending={pending} label={tenant ? "Save tenant" : "Add tenant"} pendingLabel="Saving…" />
        <button type="button" className="button" onClick={onDone} disabled={pending}>
          Cancel
        </button>
      </div>
    </form>
  );
}

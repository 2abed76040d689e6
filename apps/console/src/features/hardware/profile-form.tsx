"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { LoadingState } from "@/components/states/loading-state";
import { SelectField } from "@/components/form/select-field";
import { TextField } from "@/components/form/text-field";
import { useFormProblem } from "@/components/form/use-form-problem";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { formDefaults, parseProfileForm } from "./profile-form-values";
import type { HardwareProfile } from "./profile-types";
import { SubmitButton } from "@/components/form/submit-button";

const FIELDS = [
  "name",
  "kind",
  "cpuCores",
  "memoryBytes",
  "gpuModel",
  "gpuCount",
  "gpuMemoryBytes",
  "gpuPriceShare",
  "costPerHour",
  "currency",
];
const KINDS = [
  { value: "CPU", label: "CPU" },
  { value: "GPU", label: "GPU" },
];

/** Creates a profile, or edits `profile`. Admins only (the API checks too). */
export function ProfileForm({ profile, onDone }: { profile?: HardwareProfile; onDone: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { problem, clear, fromError, atFields } = useFormProblem();
  const onSuccess = async () => {
    await queryClient.invalidateQueries({ queryKey: trpc.hardware.list.queryKey() });
    onDone();
  };
  const create = useMutation(trpc.hardware.create.mutationOptions({ onSuccess, onError: fromError }));
  const update = useMutation(trpc.hardware.update.mutationOptions({ onSuccess, onError: fromError }));
  const pending = create.isPending || update.isPending;
  // A new profile starts from the host's cores and memory; the form is drawn once they are known (or unknowable).
  const host = useQuery({ ...trpc.hardware.host.queryOptions(), enabled: profile === undefined, staleTime: Infinity });
  const values = formDefaults(profile, host.data);
  const title = profile ? `Edit “${profile.name}”` : "Add a hardware profile";
  // Drawn once the host is known (or unknowable): drawing it blank and again with the host's values would throw
  // away what a person typed meanwhile.
  if (profile === undefined && host.isPending) return <LoadingState label="Reading this host's cores and memory…" />;

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const parsed = parseProfileForm(new FormData(event.currentTarget));
    if (!parsed.ok) {
      atFields(parsed.fieldErrors);
      return;
    }
    if (profile) update.mutate({ id: profile.id, ...parsed.input });
    else create.mutate(parsed.input);
  };

  return (
    <form onSubmit={submit} noValidate className="form form-grid" aria-label={title}>
      <h3 className="form-title">{title}</h3>
      <TextField
        label="Name"
        name="name"
        defaultValue={values.name}
        required
        maxLength={100}
        autoComplete="off"
        error={fieldMessage(problem, "name")}
      />
      <SelectField
        label="Kind"
        name="kind"
        options={KINDS}
        defaultValue={values.kind}
        error={fieldMessage(problem, "kind")}
      />
      <TextField
        label="Cost per hour"
        name="costPerHour"
        type="number"
        min={0}
        step="any"
        inputMode="decimal"
        defaultValue={values.costPerHour}
        required
        hint="What the host costs, idle or busy."
        error={fieldMessage(problem, "costPerHour")}
      />
      <TextField
        label="Currency"
        name="currency"
        defaultValue={values.currency}
        maxLength={3}
        autoComplete="off"
        hint="ISO code, e.g. USD, EUR."
        error={fieldMessage(problem, "currency")}
      />
      <TextField
        label="CPU cores (optional)"
        name="cpuCores"
        type="number"
        min={1}
        step={1}
        inputMode="numeric"
        defaultValue={values.cpuCores}
        error={fieldMessage(problem, "cpuCores")}
      />
      <TextField
        label="Memory, GiB (optional)"
        name="memoryGiB"
        type="number"
        min={0}
        step="any"
        inputMode="decimal"
        defaultValue={values.memoryGiB}
        error={fieldMessage(problem, "memoryBytes")}
      />
      <TextField
        label="GPU model (optional)"
        name="gpuModel"
        defaultValue={values.gpuModel}
        maxLength={100}
        autoComplete="off"
        hint="GPU profiles only, e.g. H100."
        error={fieldMessage(problem, "gpuModel")}
      />
      <TextField
        label="GPU count"
        name="gpuCount"
        type="number"
        min={0}
        step={1}
        inputMode="numeric"
        defaultValue={values.gpuCount}
        hint="0 for a CPU profile; at least 1 for a GPU one."
        error={fieldMessage(problem, "gpuCount")}
      />
      <TextField
        label="GPU memory, GiB (optional)"
        name="gpuMemoryGiB"
        type="number"
        min={0}
        step="any"
        inputMode="decimal"
        defaultValue={values.gpuMemoryGiB}
        error={fieldMessage(problem, "gpuMemoryBytes")}
      />
      <TextField
        label="GPU share of the price, % (optional)"
        name="gpuPricePercent"
        type="number"
        min={0}
        max={100}
        step="any"
        inputMode="decimal"
        defaultValue={values.gpuPricePercent}
        hint="GPU profiles only: the part of the cost per hour that pays for the GPUs, shared by GPU use (default 80 %); the rest is shared by CPU use."
        error={fieldMessage(problem, "gpuPriceShare")}
      />
      <FormAlert message={formMessage(problem, FIELDS)} />
      <div className="form-actions">
        <SubmitButton pending={pending} label={profile ? "Save profile" : "Add profile"} pendingLabel="Saving…" />
        <button type="button" className="button" onClick={onDone} disabled={pending}>
          Cancel
        </button>
      </div>
    </form>
  );
}

"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { SubmitButton } from "@/components/form/submit-button";
import { TextField } from "@/components/form/text-field";
import { useFormProblem } from "@/components/form/use-form-problem";
import { useSignedInUser } from "@/components/shell/session-context";
import { QueryView } from "@/components/states/query-view";
import { fieldMessage, formMessage } from "@/lib/api-problem";
import { formatDateTime } from "@/lib/format";
import { formatInteger, formatNumber } from "@/lib/number-format";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import type { AutoPerfSettingsView } from "./perf-types";

const NUMBER_FIELDS = [
  "maxConcurrency",
  "measurementIntervalMs",
  "maxTrials",
  "timeBoundSecs",
  "minGainPercent",
  "headroomMaxRequestsPerSec",
  "maxWaitSecs",
] as const;

/** The plan of automatic perf reports: everyone reads it, admins change it (perf.updateSettings, audited). */
export function AutoPerfSettingsSection() {
  const trpc = useTRPC();
  const user = useSignedInUser();
  const settings = useQuery(trpc.perf.settings.queryOptions());
  return (
    <section className="card" aria-labelledby="auto-perf-title">
      <h2 id="auto-perf-title">Automatic runs</h2>
      <QueryView query={settings} loadingLabel="Loading the plan…">
        {(data) =>
          hasRole(user.role, "ADMIN") ? (
            <AutoPerfSettingsForm settings={data} />
          ) : (
            <AutoPerfSettingsFacts settings={data} />
          )
        }
      </QueryView>
    </section>
  );
}

function planSentence(settings: AutoPerfSettingsView): string {
  return `Concurrency 1, 2, 4, … up to ${formatInteger(settings.maxConcurrency)}, until a step gains less than ${formatNumber(settings.minGainPercent)} % throughput; at most ${formatInteger(settings.timeBoundSecs)} s per run. Starts once the model's own traffic is at most ${formatNumber(settings.headroomMaxRequestsPerSec)} requests/s and the gateway leaves a core idle (waits up to ${formatInteger(settings.maxWaitSecs)} s).`;
}

function AutoPerfSettingsFacts({ settings }: { settings: AutoPerfSettingsView }) {
  return (
    <>
      <p>
        <strong>{settings.enabled ? "On" : "Off"}</strong>
        {settings.enabled
          ? ": each upload, new version, config change and operator version queues a run."
          : ": changes queue no run; runs can still be started by hand."}
      </p>
      <p className="muted">{planSentence(settings)}</p>
      <p className="muted small">Admins change this plan.</p>
    </>
  );
}

function AutoPerfSettingsForm({ settings }: { settings: AutoPerfSettingsView }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { problem, clear, fromError, atFields } = useFormProblem();
  const save = useMutation(
    trpc.perf.updateSettings.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries({ queryKey: trpc.perf.pathKey() });
      },
      onError: fromError,
    }),
  );
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    clear();
    const form = new FormData(event.currentTarget);
    const values: Record<string, number> = {};
    const errors: Array<{ path: string; message: string }> = [];
    for (const field of NUMBER_FIELDS) {
      const text = String(form.get(field) ?? "").trim();
      const value = Number(text);
      if (text === "" || !Number.isFinite(value)) errors.push({ path: field, message: "a number" });
      else values[field] = value;
    }
    if (errors.length > 0) return atFields(errors);
    save.mutate({ enabled: form.get("enabled") === "on", ...values });
  };
  const field = (name: (typeof NUMBER_FIELDS)[number], label: string, hint: string, step = 1) => (
    <TextField
      label={label}
      name={name}
      type="number"
      step={step}
      inputMode="decimal"
      defaultValue={String(settings[name])}
      required
      hint={hint}
      error={fieldMessage(problem, name)}
    />
  );
  return (
    <form onSubmit={submit} noValidate className="form form-grid" aria-label="Automatic runs">
      <div className="field">
        <label>
          <input type="checkbox" name="enabled" defaultChecked={settings.enabled} /> Run a perf report automatically
          after each upload, new version, config change and operator version
        </label>
      </div>
      {field("maxConcurrency", "Highest concurrency", "The sweep doubles: 1, 2, 4, … up to this.")}
      {field(
        "minGainPercent",
        "Stop below a gain of (%)",
        "A step that beats the best throughput so far by less than this ends the sweep.",
        0.1,
      )}
      {field("timeBoundSecs", "Time bound (seconds)", "The whole run stops after this; steps measured are kept.")}
      {field("measurementIntervalMs", "Measurement window (ms)", "Each step measures until three windows agree.")}
      {field("maxTrials", "Windows per step at most", "At least 3.")}
      {field(
        "headroomMaxRequestsPerSec",
        "Start only below (requests/s)",
        "Users' traffic to the measured model itself when a run starts. Traffic to other models does not hold a run back while the gateway leaves a core idle.",
        0.1,
      )}
      {field("maxWaitSecs", "Wait for headroom at most (seconds)", "Then the run fails with the reason.")}
      <FormAlert message={formMessage(problem, [...NUMBER_FIELDS, "enabled"])} />
      <div className="form-actions">
        <SubmitButton pending={save.isPending} label="Save plan" pendingLabel="Saving…" />
        {save.isSuccess ? <span role="status">Saved.</span> : null}
        {settings.updatedAt ? (
          <span className="muted small">Last changed {formatDateTime(settings.updatedAt)}</span>
        ) : null}
      </div>
    </form>
  );
}

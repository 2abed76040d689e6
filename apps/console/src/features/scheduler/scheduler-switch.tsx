"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { apiProblem } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";

/** On/off for admins (stored and audited); everyone else reads the state. */
export function SchedulerSwitch({ enabled, canChange }: { enabled: boolean; canChange: boolean }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const setEnabled = useMutation(
    trpc.scheduler.setEnabled.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.scheduler.status.queryKey() }),
    }),
  );
  return (
    <div className="inline-field">
      <p>
        The scheduler is <strong>{enabled ? "on" : "off"}</strong>.{" "}
        {enabled
          ? "It sets each model's instance count from its demand."
          : "Instance counts stay where they are; pins are not applied."}
      </p>
      {canChange ? (
        <button
          type="button"
          className="button"
          disabled={setEnabled.isPending}
          onClick={() => setEnabled.mutate({ enabled: !enabled })}
        >
          {enabled ? "Turn the scheduler off" : "Turn the scheduler on"}
        </button>
      ) : null}
      {setEnabled.isError ? (
        <p className="field-error" role="alert">
          {apiProblem(setEnabled.error).message}
        </p>
      ) : null}
    </div>
  );
}

"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId } from "react";
import { FormAlert } from "@/components/form/form-alert";
import { useFormProblem } from "@/components/form/use-form-problem";
import { QueryView } from "@/components/states/query-view";
import { formMessage } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";

/**
 * Who may upload code (custom steps, issue 21): engineers and admins by
 * default, or admins only. An admin setting (models.setCodeUploadPolicy,
 * audited as settings.code_upload); the switch saves as it is flipped, and
 * the sentence under it says what holds now, as the API answers it.
 */
export function CodeUploadSection() {
  const trpc = useTRPC();
  const id = useId();
  const queryClient = useQueryClient();
  const policy = useQuery(trpc.models.codeUploadPolicy.queryOptions());
  const { problem, clear, fromError } = useFormProblem();
  const save = useMutation(
    trpc.models.setCodeUploadPolicy.mutationOptions({
      onSuccess: (saved) => queryClient.setQueryData(trpc.models.codeUploadPolicy.queryKey(), saved),
      onError: fromError,
    }),
  );
  return (
    <section className="card" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Code uploads</h2>
      <p className="muted">
        Custom steps are TypeScript that runs on the servers (sandboxed: see the README&apos;s trust model). Every
        upload is audited with its code&apos;s SHA-256.
      </p>
      <QueryView query={policy} loadingLabel="Loading who may upload code…">
        {(data) => (
          <>
            <div className="field">
              <label>
                <input
                  type="checkbox"
                  // Shows the click at once; a refused save goes back to what the API holds.
                  checked={save.isPending && save.variables !== undefined ? save.variables.adminsOnly : data.adminsOnly}
                  disabled={save.isPending}
                  aria-describedby={`${id}-now`}
                  onChange={(event) => {
                    clear();
                    save.mutate({ adminsOnly: event.currentTarget.checked });
                  }}
                />{" "}
                Only admins may upload code (custom steps)
              </label>
            </div>
            <p id={`${id}-now`} role="status">
              {save.isPending
                ? "Saving…"
                : data.adminsOnly
                  ? "Now: only admins may upload custom steps; engineers are refused."
                  : "Now: engineers and admins may upload custom steps (the default)."}
            </p>
          </>
        )}
      </QueryView>
      <FormAlert message={formMessage(problem, [])} />
    </section>
  );
}

"use client";

import { useMutation } from "@tanstack/react-query";
import { apiProblem } from "@/lib/api-problem";
import { useTRPC } from "@/lib/trpc";
import { useInvalidateModels } from "./use-invalidate-models";

/** Loading is not destructive: no confirmation; the gateway's refusal shows under the button. */
export function LoadModelButton({ name }: { name: string }) {
  const trpc = useTRPC();
  const invalidate = useInvalidateModels();
  const load = useMutation(trpc.models.load.mutationOptions({ onSettled: invalidate }));
  return (
    <div className="inline-field">
      <button
        type="button"
        className="button"
        aria-label={`Load ${name}`}
        disabled={load.isPending}
        onClick={() => load.mutate({ name })}
      >
        {load.isPending ? "Loading…" : "Load"}
      </button>
      {load.isError ? (
        <p className="field-error" role="alert">
          {apiProblem(load.error).message}
        </p>
      ) : null}
    </div>
  );
}

"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { RouterOutputs } from "@/lib/api-types";
import { useTRPC } from "@/lib/trpc";

type Job = RouterOutputs["jobs"]["list"][number];

/**
 * A job's buttons, those its state allows: pause (queued or running), resume (paused or failed), cancel (not yet
 * finished), retry its failed rows (once stopped), download its results. A refused action says why beneath them.
 */
export function JobActions({ job }: { job: Job }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [problem, setProblem] = useState<string | null>(null);
  const options = {
    onSuccess: async () => {
      setProblem(null);
      await queryClient.invalidateQueries({ queryKey: trpc.jobs.list.queryKey() });
    },
    onError: (error: { message: string }) => setProblem(error.message),
  };
  const pause = useMutation(trpc.jobs.pause.mutationOptions(options));
  const resume = useMutation(trpc.jobs.resume.mutationOptions(options));
  const cancel = useMutation(trpc.jobs.cancel.mutationOptions(options));
  const retry = useMutation(trpc.jobs.retryFailed.mutationOptions(options));
  const active = job.state === "RUNNING" || job.state === "QUEUED";
  return (
    <>
      {active ? (
        <button type="button" className="button" onClick={() => pause.mutate({ id: job.id })}>
          Pause
        </button>
      ) : null}
      {job.state === "PAUSED" || job.state === "FAILED" ? (
        <button type="button" className="button" onClick={() => resume.mutate({ id: job.id })}>
          Resume
        </button>
      ) : null}
      {active || job.state === "PAUSED" ? (
        <button type="button" className="button" onClick={() => cancel.mutate({ id: job.id })}>
          Cancel
        </button>
      ) : null}
      {job.failedRows > 0 && (job.state === "DONE" || job.state === "PAUSED" || job.state === "FAILED") ? (
        <button type="button" className="button" onClick={() => retry.mutate({ id: job.id })}>
          Retry failed rows
        </button>
      ) : null}
      {job.hasResult ? (
        <a className="button" href={`/api/jobs/${job.id}/result.parquet`} download>
          Download results
        </a>
      ) : null}
      {problem ? (
        <div className="field-error small" role="alert">
          {problem}
        </div>
      ) : null}
    </>
  );
}

"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useEffect, useId } from "react";
import { ConfirmButton } from "@/components/confirm-button";
import { ErrorState } from "@/components/states/error-state";
import { LoadingState } from "@/components/states/loading-state";
import { useTRPC } from "@/lib/trpc";
import { isPending, reportHref, statusLabel, type PerfProgress } from "./perf-types";

const POLL_MS = 1000;

/**
 * A run's progress bar, polled (perf.progress) until the run ends; then a
 * link to its report. Cancelling keeps the steps measured so far.
 */
export function PerfRunProgress({
  id,
  canCancel,
  showReportLink = true,
}: {
  id: string;
  canCancel: boolean;
  showReportLink?: boolean;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const labelId = useId();
  const progress = useQuery({
    ...trpc.perf.progress.queryOptions({ id }),
    staleTime: 0,
    refetchInterval: (query) =>
      query.state.data === undefined || isPending(query.state.data.status) ? POLL_MS : false,
  });
  const cancel = useMutation(trpc.perf.cancel.mutationOptions());
  const status = progress.data?.status;

  useEffect(() => {
    // The run ended: the list and the report have news.
    if (status !== undefined && !isPending(status))
      void queryClient.invalidateQueries({ queryKey: trpc.perf.pathKey() });
  }, [status, queryClient, trpc]);

  if (progress.isPending) return <LoadingState label="Reading the run's progress…" />;
  if (progress.isError)
    return (
      <ErrorState
        title="Could not read the run's progress"
        error={progress.error}
        onRetry={() => void progress.refetch()}
      />
    );
  const view = progress.data;
  const running = isPending(view.status);
  return (
    <div className="perf-progress">
      <p id={labelId} className="perf-progress-label">
        {progressLabel(view)}
      </p>
      <progress aria-labelledby={labelId} max={100} value={view.percent}>
        {view.percent} %
      </progress>
      <span className="perf-progress-percent" aria-hidden="true">
        {Math.round(view.percent)} %
      </span>
      {view.error ? <p className={view.status === "FAILED" ? "form-alert" : "muted"}>{view.error}</p> : null}
      <div className="form-actions">
        {running && canCancel ? (
          <ConfirmButton
            label="Cancel run"
            title={view.status === "QUEUED" ? "Cancel this queued perf run?" : "Stop this perf run?"}
            description={
              view.status === "QUEUED" ? (
                <p>The run leaves the queue without measuring anything; its report ends as cancelled.</p>
              ) : (
                <p>Measuring stops now. The steps already measured are kept in the report, which ends as cancelled.</p>
              )
            }
            confirmLabel="Stop the run"
            onConfirm={() => cancel.mutateAsync({ id })}
          />
        ) : null}
        {!running && showReportLink ? (
          <Link className="button button-primary" href={reportHref(id)}>
            Open the report
          </Link>
        ) : null}
      </div>
    </div>
  );
}

function progressLabel(view: PerfProgress): string {
  if (view.status === "QUEUED") {
    const ahead =
      view.queuePosition === null || view.queuePosition === 0
        ? "next in the queue"
        : `${view.queuePosition} ${view.queuePosition === 1 ? "run" : "runs"} ahead`;
    return `Queued: ${ahead}${view.waitingFor ? `, waiting for ${view.waitingFor}` : ""}`;
  }
  if (view.status === "RUNNING") {
    return `Measuring${view.currentConcurrency !== null ? ` concurrency ${view.currentConcurrency}` : ""}: step ${Math.min(view.completedSteps + 1, view.totalSteps)} of ${view.totalSteps}`;
  }
  return `${statusLabel(view.status)}: ${view.completedSteps} of ${view.totalSteps} steps measured`;
}

"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ConfirmButton } from "@/components/confirm-button";
import { formatDateTime } from "@/lib/format";
import { useTRPC } from "@/lib/trpc";
import { targetLabel, type PerfReportSummary } from "./perf-types";

/** Deletes a finished report and its samples, after asking. */
export function DeletePerfReportButton({ report, onDeleted }: { report: PerfReportSummary; onDeleted?: () => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const remove = useMutation(
    trpc.perf.delete.mutationOptions({
      onSuccess: async () => {
        onDeleted?.();
        await queryClient.invalidateQueries({ queryKey: trpc.perf.list.pathKey() });
      },
    }),
  );
  const what = `${targetLabel(report)} of ${formatDateTime(report.createdAt)}`;
  return (
    <ConfirmButton
      label="Delete"
      accessibleLabel={`Delete report ${what}`}
      title="Delete this perf report?"
      description={<p>The report on {what} and all its measurements are deleted. This cannot be undone.</p>}
      confirmLabel="Delete report"
      onConfirm={() => remove.mutateAsync({ id: report.id })}
    />
  );
}

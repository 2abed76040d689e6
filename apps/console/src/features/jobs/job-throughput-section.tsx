"use client";

import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { SelectField } from "@/components/form/select-field";
import { QueryView } from "@/components/states/query-view";
import { SERIES_COLORS } from "@/features/charts/chart-palette";
import type { ChartRow, ChartSeries } from "@/features/charts/chart-series";
import { TimeSeriesChart } from "@/features/charts/time-series-chart";
import type { RouterOutputs } from "@/lib/api-types";
import { formatMoney, formatNumber } from "@/lib/number-format";
import { useTRPC } from "@/lib/trpc";
import { perJobState } from "./job-state-query";
import { jobTargetLabel } from "./jobs-table";

type Job = RouterOutputs["jobs"]["list"][number];
type JobCost = NonNullable<RouterOutputs["jobs"]["get"]["cost"]>;

const REFRESH_MS = 2_000;
/** After a job ends, the usage samples of its last seconds are written within the sampler's interval: keep asking a while. */
const SETTLE_MS = 30_000;
const SERIES: ChartSeries[] = [
  { key: "job", label: "Job rows/s", color: SERIES_COLORS.primary },
  { key: "online", label: "Online requests/s", color: SERIES_COLORS.p95 },
];

/** The job a page opens on: the first running one, else the newest (the list comes newest first). */
export function defaultJobId(jobs: readonly Job[]): string | undefined {
  return (jobs.find((job) => job.state === "RUNNING") ?? jobs[0])?.id;
}

/**
 * One job's throughput over its run beside its target's online traffic
 * (jobs.throughput), and what the job cost so far (jobs.get's cost: its
 * share of its target's requests, costed on the hardware profile).
 */
export function JobThroughputSection({ jobs }: { jobs: readonly Job[] }) {
  const [chosen, setChosen] = useState<string | null>(null);
  const id = chosen !== null && jobs.some((job) => job.id === chosen) ? chosen : defaultJobId(jobs);
  if (id === undefined) return null;
  const job = jobs.find((candidate) => candidate.id === id)!;
  return (
    <section className="subcard" aria-labelledby="job-throughput-title">
      <div className="section-header">
        <h3 id="job-throughput-title">Throughput and cost</h3>
        <div className="inline-select shrinkable">
          <SelectField
            label="Job"
            name="job"
            value={id}
            onChange={(event) => setChosen(event.target.value)}
            options={jobs.map((candidate) => ({
              value: candidate.id,
              label: `${jobTargetLabel(candidate)} on ${candidate.datasetName} (${candidate.id.slice(0, 8)})`,
            }))}
          />
        </div>
      </div>
      <JobCostLine key={`cost-${id}`} id={id} state={job.state} live={isLive(job)} />
      <JobThroughputChart key={`chart-${id}`} id={id} state={job.state} live={isLive(job)} />
    </section>
  );
}

/** Running, or ended so recently that its last samples may still be coming: its figures are refreshed. */
function isLive(job: Job): boolean {
  if (job.state === "RUNNING") return true;
  const ended = job.finishedAt ?? null;
  return ended !== null && Date.now() - new Date(ended).getTime() < SETTLE_MS;
}

function JobCostLine({ id, state, live }: { id: string; state: string; live: boolean }) {
  const trpc = useTRPC();
  const job = useQuery({
    ...perJobState(trpc.jobs.get.queryOptions({ id }), state),
    refetchInterval: live ? REFRESH_MS : false,
  });
  return (
    <QueryView query={job} loadingLabel="Loading the job's cost…">
      {(data) => (data.cost !== null ? <p aria-label="Job cost">{costText(data.cost, data.target.name)}</p> : null)}
    </QueryView>
  );
}

/** "Cost so far: $0.02 — 399 of its 1,200 requests to add_sub on cpu host", or why there is none yet. */
function costText(cost: JobCost, target: string): string {
  if (cost.lines.length === 0)
    return cost.unsampledRequests > 0
      ? `Cost: not known yet: the control plane has not sampled ${target}'s usage over the job's ${formatNumber(cost.unsampledRequests)} requests (or no hardware profile prices it).`
      : "Cost: none yet (the job has sent no requests).";
  const lines = cost.lines
    .map(
      (line) =>
        `${formatNumber(line.requests)} of ${formatNumber(line.targetRequests)} requests to ${target} on ${line.profileName}: ${formatMoney(line.cost, line.currency)}`,
    )
    .join("; ");
  const total = cost.total !== null && cost.currency !== null ? formatMoney(cost.total, cost.currency) : "per profile";
  const unsampled =
    cost.unsampledRequests > 0 ? ` (${formatNumber(cost.unsampledRequests)} requests not yet sampled)` : "";
  return `Cost so far: ${total} — ${lines}${unsampled}.`;
}

function JobThroughputChart({ id, state, live }: { id: string; state: string; live: boolean }) {
  const trpc = useTRPC();
  const series = useQuery({
    ...perJobState(trpc.jobs.throughput.queryOptions({ id }), state),
    refetchInterval: live ? REFRESH_MS : false,
  });
  return (
    <QueryView query={series} loadingLabel="Loading the job's throughput…">
      {(data) => {
        if (data === null) return <p className="muted">The job has not started yet.</p>;
        const rows: ChartRow[] = data.points.map((point) => ({
          t: new Date(point.at).getTime(),
          job: point.jobRowsPerSec,
          online: point.onlineRequestsPerSec,
        }));
        return (
          <TimeSeriesChart
            title="Job throughput and online traffic"
            yLabel="per second"
            rows={rows}
            series={SERIES}
            domain={[new Date(data.from).getTime(), new Date(data.to).getTime()]}
            formatValue={(value) => `${formatNumber(value)}/s`}
            note={`Buckets of ${data.bucketSecs} s; online traffic is the target's requests less batch jobs'.`}
          />
        );
      }}
    </QueryView>
  );
}

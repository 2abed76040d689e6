"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { PageHeader } from "@/components/page-header";
import { useSignedInUser } from "@/components/shell/session-context";
import { EmptyState } from "@/components/states/empty-state";
import { QueryView } from "@/components/states/query-view";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { ConcurrencyCharts } from "./concurrency-charts";
import { DeletePerfReportButton } from "./delete-perf-report-button";
import { PerfReportFacts } from "./perf-report-facts";
import { perfReportCsv, perfReportFileName, perfReportJson } from "./perf-report-export";
import { PerfRunProgress } from "./perf-run-progress";
import { PerfTable } from "./perf-table";
import { StepWaterfall } from "./step-waterfall";
import { ThroughputLatencyChart } from "./throughput-latency-chart";
import { isPending, targetLabel, type PerfReportDetail } from "./perf-types";

export function PerfReportPage({ id }: { id: string }) {
  const trpc = useTRPC();
  const report = useQuery(trpc.perf.get.queryOptions({ id }));
  return (
    <>
      <PageHeader title={report.data ? `Perf report: ${targetLabel(report.data)}` : "Perf report"}>
        <p>
          <Link href="/perf">All perf reports</Link> ·{" "}
          <Link href={`/perf/compare?a=${encodeURIComponent(id)}`}>Compare with another report</Link>
        </p>
      </PageHeader>
      <QueryView query={report} loadingLabel="Loading the report…">
        {(detail) => <PerfReportView report={detail} />}
      </QueryView>
    </>
  );
}

function PerfReportView({ report }: { report: PerfReportDetail }) {
  const user = useSignedInUser();
  const router = useRouter();
  const canManage = hasRole(user.role, "ENGINEER");
  return (
    <>
      <section className="card" aria-labelledby="run-facts-title">
        <div className="section-header">
          <h2 id="run-facts-title">Run</h2>
          <div className="form-actions">
            {!isPending(report.status) ? <PerfReportDownloads report={report} /> : null}
            {canManage && !isPending(report.status) ? (
              <DeletePerfReportButton report={report} onDeleted={() => router.push("/perf")} />
            ) : null}
          </div>
        </div>
        {isPending(report.status) ? (
          <PerfRunProgress id={report.id} canCancel={canManage} showReportLink={false} />
        ) : null}
        {report.error && !isPending(report.status) ? (
          <p className={report.status === "FAILED" ? "form-alert" : "notice"}>{report.error}</p>
        ) : null}
        <PerfReportFacts report={report} />
      </section>
      {report.samples.length === 0 ? (
        <section className="card">
          <EmptyState title={isPending(report.status) ? "No step measured yet" : "No step was measured"}>
            <p>
              {isPending(report.status)
                ? "The charts appear when the run ends."
                : "The run ended before its first step finished."}
            </p>
          </EmptyState>
        </section>
      ) : (
        <>
          <section className="card" aria-labelledby="perf-charts-title">
            <h2 id="perf-charts-title">Charts</h2>
            <div className="figure-grid">
              <ThroughputLatencyChart samples={report.samples} />
              <ConcurrencyCharts samples={report.samples} />
            </div>
          </section>
          <section className="card" aria-labelledby="perf-table-title">
            <h2 id="perf-table-title">Perf table</h2>
            <PerfTable
              samples={report.samples}
              stableByConcurrency={
                new Map(report.summary?.steps.map((step) => [step.concurrency, step.stable] as const) ?? [])
              }
            />
          </section>
          <StepWaterfall samples={report.samples} />
        </>
      )}
    </>
  );
}

/** Download the report as JSON (all of it) or its samples as CSV: files made in the browser from what the page shows. */
function PerfReportDownloads({ report }: { report: PerfReportDetail }) {
  const save = (extension: "json" | "csv") => {
    const text = extension === "json" ? perfReportJson(report) : perfReportCsv(report);
    const url = URL.createObjectURL(new Blob([text], { type: extension === "json" ? "application/json" : "text/csv" }));
    const link = document.createElement("a");
    link.href = url;
    link.download = perfReportFileName(report, extension);
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };
  return (
    <>
      <button type="button" className="button" onClick={() => save("csv")}>
        Download CSV
      </button>
      <button type="button" className="button" onClick={() => save("json")}>
        Download JSON
      </button>
    </>
  );
}

"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { PageHeader } from "@/components/page-header";
import { useSignedInUser } from "@/components/shell/session-context";
import { QueryView } from "@/components/states/query-view";
import { hasRole } from "@/lib/roles";
import { useTRPC } from "@/lib/trpc";
import { ImportPerfCsvForm } from "./import-perf-csv-form";
import { NewPerfRunForm } from "./new-perf-run-form";
import { PerfReportsTable } from "./perf-reports-table";
import { PerfRunProgress } from "./perf-run-progress";
import { AutoPerfSettingsSection } from "./auto-perf-settings-section";
import { isPending } from "./perf-types";

/** Perf reports: start a run, follow it, and the reports of earlier runs. */
export function PerfPage() {
  const trpc = useTRPC();
  const user = useSignedInUser();
  const canManage = hasRole(user.role, "ENGINEER");
  // Runs may be started elsewhere (another person, the API): look again now and then, more often while one goes.
  const reports = useQuery({
    ...trpc.perf.list.queryOptions(),
    refetchInterval: (query) => (query.state.data?.some((report) => isPending(report.status)) ? 3_000 : 15_000),
  });
  const [startedId, setStartedId] = useState<string | null>(null);
  // The run this page follows: the one just started, else one that is going.
  const runningId = reports.data?.find((report) => report.status === "RUNNING")?.id ?? null;
  const followed = startedId ?? runningId;
  return (
    <>
      <PageHeader title="Perf reports">
        <p>
          Load tests against the gateway (the <code>operon perf</code> engine over HTTP): throughput and latency per
          concurrency step. Runs wait in a queue and run one at a time; uploads, new versions, config changes and
          operator versions queue one automatically.
        </p>
      </PageHeader>
      {followed ? (
        <section className="card" aria-labelledby="run-title">
          <h2 id="run-title">{startedId ? "Your run" : "Run in progress"}</h2>
          <PerfRunProgress key={followed} id={followed} canCancel={canManage} />
        </section>
      ) : null}
      {canManage ? (
        <section className="card">
          <NewPerfRunForm onStarted={setStartedId} queueBusy={runningId !== null} />
        </section>
      ) : null}
      {canManage ? (
        <section className="card">
          <ImportPerfCsvForm />
        </section>
      ) : null}
      <AutoPerfSettingsSection />
      <section className="card" aria-labelledby="reports-title">
        <div className="section-header">
          <h2 id="reports-title">Reports</h2>
          <Link href="/perf/compare">Compare two reports</Link>
        </div>
        <QueryView
          query={reports}
          loadingLabel="Loading reports…"
          isEmpty={(list) => list.length === 0}
          empty={{
            title: "No perf reports yet",
            body: (
              <p>{canManage ? "Start a run above to measure a model or operator." : "An engineer can start a run."}</p>
            ),
          }}
        >
          {(list) => <PerfReportsTable reports={list} canManage={canManage} />}
        </QueryView>
      </section>
    </>
  );
}

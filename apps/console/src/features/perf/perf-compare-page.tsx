"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { DataTable, type DataColumn } from "@/components/data-table/data-table";
import { SelectField } from "@/components/form/select-field";
import { PageHeader } from "@/components/page-header";
import { QueryView } from "@/components/states/query-view";
import { formatDateTime } from "@/lib/format";
import { formatLatencyValue, formatNumber } from "@/lib/number-format";
import { useTRPC } from "@/lib/trpc";
import { changeText, compareSteps, type ComparedFigure, type ComparedStep } from "./perf-compare";
import { inUnit, PERF_LATENCY_UNIT, type PerfLatencyUnit } from "./perf-latency-unit";
import {
  isPending,
  reportHref,
  targetLabel,
  triggerLabel,
  type PerfReportDetail,
  type PerfReportSummary,
} from "./perf-types";

/** "model add_sub v1 · 5 Dec 2026, 08:57 · admin@example.com": a report as a choice. */
function reportChoice(report: PerfReportSummary): string {
  return `${targetLabel(report)} · ${formatDateTime(report.createdAt)} · ${triggerLabel(report)}`;
}

const sameTarget = (one: PerfReportSummary, other: PerfReportSummary) =>
  one.targetKind === other.targetKind && one.targetName === other.targetName;

/** Two finished perf reports of one target side by side (issue 27 item 10): the choice lives in the URL (?a=&b=). */
export function PerfComparePage({ a, b }: { a: string | null; b: string | null }) {
  const trpc = useTRPC();
  const router = useRouter();
  const reports = useQuery(trpc.perf.list.queryOptions({ limit: 500 }));
  const choose = (nextA: string | null, nextB: string | null) => {
    const params = new URLSearchParams();
    if (nextA) params.set("a", nextA);
    if (nextB) params.set("b", nextB);
    router.replace(`/perf/compare${params.size > 0 ? `?${params}` : ""}`);
  };
  return (
    <>
      <PageHeader title="Compare perf reports">
        <p>
          Two reports of the same model or operator, step by step: throughput and p50/p99 latency of each, and the
          change from A to B. <Link href="/perf">All perf reports</Link>
        </p>
      </PageHeader>
      <QueryView query={reports} loadingLabel="Loading reports…">
        {(list) => {
          const finished = list.filter((report) => !isPending(report.status));
          const first = finished.find((report) => report.id === a);
          const second = first ? finished.find((report) => report.id === b && sameTarget(report, first)) : undefined;
          const others = first ? finished.filter((report) => report.id !== first.id && sameTarget(report, first)) : [];
          return (
            <>
              <section className="card" aria-labelledby="compare-choice-title">
                <h2 id="compare-choice-title">Reports</h2>
                <div className="form-grid compare-choice">
                  <SelectField
                    label="Report A"
                    name="a"
                    value={first?.id ?? ""}
                    onChange={(event) => {
                      const picked = finished.find((report) => report.id === event.target.value);
                      // B stays when it measured the same target; otherwise it is chosen again.
                      choose(picked?.id ?? null, picked && second && sameTarget(picked, second) ? second.id : null);
                    }}
                    options={[
                      { value: "", label: "Choose a report" },
                      ...finished.map((report) => ({ value: report.id, label: reportChoice(report) })),
                    ]}
                  />
                  <SelectField
                    label="Report B (same target)"
                    name="b"
                    value={second?.id ?? ""}
                    disabled={first === undefined}
                    onChange={(event) => choose(first?.id ?? null, event.target.value || null)}
                    options={[
                      {
                        value: "",
                        label: first === undefined ? "Choose report A first" : "Choose a report of the same target",
                      },
                      ...others.map((report) => ({ value: report.id, label: reportChoice(report) })),
                    ]}
                  />
                </div>
                {a !== null && first === undefined ? (
                  <p className="notice">Report A ({a}) is not among the finished perf reports: choose one.</p>
                ) : first !== undefined && others.length === 0 ? (
                  <p className="notice">
                    {targetLabel(first)} has no other finished report to compare with: start a run on the{" "}
                    <Link href="/perf">Perf reports</Link> page.
                  </p>
                ) : b !== null && first !== undefined && second === undefined ? (
                  <p className="notice">
                    Report B ({b}) is not a finished report of {first.targetName}: choose one.
                  </p>
                ) : null}
              </section>
              {first && second ? <ComparedReports a={first.id} b={second.id} /> : null}
            </>
          );
        }}
      </QueryView>
    </>
  );
}

function ComparedReports({ a, b }: { a: string; b: string }) {
  const trpc = useTRPC();
  const first = useQuery(trpc.perf.get.queryOptions({ id: a }));
  const second = useQuery(trpc.perf.get.queryOptions({ id: b }));
  return (
    <section className="card" aria-labelledby="compare-steps-title">
      <h2 id="compare-steps-title">Steps side by side</h2>
      <QueryView query={first} loadingLabel="Loading report A…">
        {(one) => (
          <QueryView query={second} loadingLabel="Loading report B…">
            {(other) => <ComparedTable a={one} b={other} />}
          </QueryView>
        )}
      </QueryView>
    </section>
  );
}

function ComparedTable({ a, b }: { a: PerfReportDetail; b: PerfReportDetail }) {
  const unit = PERF_LATENCY_UNIT;
  const rows = compareSteps(a.samples, b.samples);
  return (
    <>
      <ul className="plain-list">
        <ComparedReportLine letter="A" report={a} />
        <ComparedReportLine letter="B" report={b} />
      </ul>
      <DataTable
        label={`Steps of reports A and B; latencies in ${unit.name}; changes from A to B`}
        columns={comparedColumns(unit)}
        rows={rows}
        rowKey={(row) => `${row.batchSize}-${row.concurrency}`}
        empty={{ title: "Neither report measured a step" }}
      />
    </>
  );
}

function ComparedReportLine({ letter, report }: { letter: "A" | "B"; report: PerfReportDetail }) {
  const best = report.summary?.best;
  return (
    <li>
      {letter}: <Link href={reportHref(report.id)}>{targetLabel(report)}</Link>, {formatDateTime(report.createdAt)},{" "}
      {triggerLabel(report)}
      {best ? `; best ${formatNumber(best.throughput)} infer/s at concurrency ${best.concurrency}` : ""}
    </li>
  );
}

function comparedColumns(unit: PerfLatencyUnit): DataColumn<ComparedStep>[] {
  const figures = (
    id: string,
    name: string,
    pick: (row: ComparedStep) => ComparedFigure,
    show: (value: number | null) => string,
  ): DataColumn<ComparedStep>[] => [
    { id: `${id}-a`, header: `${name} A`, numeric: true, cell: (row) => show(pick(row).a) },
    { id: `${id}-b`, header: `${name} B`, numeric: true, cell: (row) => show(pick(row).b) },
    {
      id: `${id}-change`,
      header: `${name} change`,
      numeric: true,
      cell: (row) => changeText(pick(row).changePercent),
    },
  ];
  const latency = formatLatencyValue;
  return [
    { id: "concurrency", header: "Concurrency", rowHeader: true, numeric: true, cell: (row) => row.concurrency },
    { id: "batch", header: "Batch", numeric: true, cell: (row) => row.batchSize },
    ...figures(
      "throughput",
      "Inferences/s",
      (row) => row.throughput,
      (value) => formatNumber(value),
    ),
    ...figures(
      "p50",
      `p50 (${unit.symbol})`,
      (row) => row.p50Us,
      (value) => latency(inUnit(value, unit)),
    ),
    ...figures(
      "p99",
      `p99 (${unit.symbol})`,
      (row) => row.p99Us,
      (value) => latency(inUnit(value, unit)),
    ),
  ];
}

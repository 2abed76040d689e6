import type { PerfRunStatus, PerfTargetKind, PrismaClient } from "@operon/db";
import { notFound } from "../../app-error.js";
import type { ActiveRun } from "./perf-run-execution.js";
import {
  configOf,
  reportRelations,
  viewReport,
  viewSample,
  type PerfReportView,
  type PerfSampleView,
} from "./perf-report-views.js";
import { compareVersionList, type VersionComparison } from "./version-comparison.js";

/**
 * What the perf pages read: a run's progress (from memory while it is in
 * the slot, else from its report), the reports by target, the queue, and
 * per version of a model its latest report compared with the previous
 * version's.
 */
export interface PerfProgressView {
  id: string;
  status: PerfRunStatus;
  completedSteps: number;
  totalSteps: number;
  /** The concurrency being measured; null when the run is not measuring. */
  currentConcurrency: number | null;
  /** 0..100: completed steps plus the share of the current step's windows. */
  percent: number;
  error: string | null;
  /** QUEUED only: runs ahead of it (the one measuring counts), else null. */
  queuePosition: number | null;
  /** What it waits for, e.g. "waiting for headroom: 120 requests/s", else null. */
  waitingFor: string | null;
}

/** The target's latest report and, while it is queued or running, its progress. */
export interface LatestReportView {
  report: PerfReportView | null;
  progress: PerfProgressView | null;
}

export interface VersionPerfView {
  version: string;
  /** The version's latest report of any status (its status shows on the version list). */
  latest: PerfReportView | null;
  /** Against the previous version's latest successful report; null without one or without a common concurrency. */
  comparison: VersionComparison | null;
}

/** What the views need of the queue's live state. */
export interface PerfQueueState {
  /** The run in the slot now, if any. */
  active(): ActiveRun | undefined;
  /** What holds the measuring slot now (a perf run is "perf <id>"), if anything. */
  slotHolder(): string | undefined;
}

export class PerfRunViews {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly state: PerfQueueState,
  ) {}

  async progress(id: string): Promise<PerfProgressView> {
    const run = this.state.active();
    if (run !== undefined && run.id === id) {
      if (run.phase === "waiting") {
        return {
          id,
          status: "QUEUED",
          completedSteps: 0,
          totalSteps: run.totalSteps,
          currentConcurrency: null,
          percent: 0,
          error: null,
          queuePosition: 0,
          waitingFor: run.waitingFor,
        };
      }
      const stepShare = run.currentConcurrency === null ? 0 : Math.min(run.window / Math.max(1, run.maxWindows), 0.99);
      return {
        id,
        status: "RUNNING",
        completedSteps: run.completedSteps,
        totalSteps: run.totalSteps,
        currentConcurrency: run.currentConcurrency,
        percent: round1(Math.min(99.9, ((run.completedSteps + stepShare) / run.totalSteps) * 100)),
        error: null,
        queuePosition: null,
        waitingFor: null,
      };
    }
    const report = await this.prisma.perfReport.findUnique({
      where: { id },
      include: { _count: { select: { samples: true } } },
    });
    if (report === null) throw notFound(`perf report ${id}`);
    const config = configOf(report);
    const completedSteps = report._count.samples;
    const totalSteps = report.status === "SUCCEEDED" ? completedSteps : (config?.totalSteps ?? completedSteps);
    let queuePosition: number | null = null;
    let waitingFor: string | null = null;
    if (report.status === "QUEUED") {
      const ahead = await this.prisma.perfReport.count({
        where: {
          status: "QUEUED",
          OR: [{ createdAt: { lt: report.createdAt } }, { createdAt: report.createdAt, id: { lt: report.id } }],
        },
      });
      queuePosition = ahead + (this.state.active() !== undefined ? 1 : 0);
      const holder = this.state.slotHolder();
      waitingFor =
        holder !== undefined && !holder.startsWith("perf ") ? `its turn (measuring now: ${holder})` : "its turn";
    }
    return {
      id,
      status: report.status,
      completedSteps,
      totalSteps,
      currentConcurrency: null,
      percent: report.status === "SUCCEEDED" ? 100 : totalSteps > 0 ? round1((completedSteps / totalSteps) * 100) : 0,
      error: report.error,
      queuePosition,
      waitingFor,
    };
  }

  async list(filter: { targetName?: string | undefined; limit: number }): Promise<PerfReportView[]> {
    const rows = await this.prisma.perfReport.findMany({
      where: filter.targetName !== undefined ? { targetName: filter.targetName } : {},
      include: reportRelations,
      orderBy: { createdAt: "desc" },
      take: filter.limit,
    });
    return rows.map(viewReport);
  }

  /** The queue: the run measuring (if any) and the queued ones in the order they will run, plus what holds the slot. */
  async queue(): Promise<{ slotHolder: string | null; runs: PerfReportView[] }> {
    const rows = await this.prisma.perfReport.findMany({
      where: { status: { in: ["RUNNING", "QUEUED"] } },
      include: reportRelations,
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: 200,
    });
    const running = rows.filter((row) => row.status === "RUNNING");
    const queued = rows.filter((row) => row.status === "QUEUED");
    return { slotHolder: this.state.slotHolder() ?? null, runs: [...running, ...queued].map(viewReport) };
  }

  /** The target's newest report of any status, with its progress while it is queued or running: "the latest report" of a model or operator page. */
  async latest(target: { kind: PerfTargetKind; name: string }): Promise<LatestReportView> {
    const row = await this.prisma.perfReport.findFirst({
      where: { targetKind: target.kind, targetName: target.name },
      include: reportRelations,
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    });
    if (row === null) return { report: null, progress: null };
    const progress = row.status === "QUEUED" || row.status === "RUNNING" ? await this.progress(row.id) : null;
    return { report: viewReport(row), progress };
  }

  /**
   * Per version of a model: its latest report and how its latest successful
   * report compares with the previous version's (version-comparison.ts).
   */
  async versionReports(modelName: string): Promise<VersionPerfView[]> {
    const rows = await this.prisma.perfReport.findMany({
      where: { targetKind: "MODEL", targetName: modelName, targetVersion: { not: null } },
      include: { ...reportRelations, samples: { select: { concurrency: true, throughput: true, latencyP99Us: true } } },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: 500,
    });
    const latest = new Map<string, (typeof rows)[number]>();
    const succeeded = new Map<string, (typeof rows)[number]>();
    for (const row of rows) {
      const version = row.targetVersion!;
      if (!latest.has(version)) latest.set(version, row);
      if (row.status === "SUCCEEDED" && row.samples.length > 0 && !succeeded.has(version)) succeeded.set(version, row);
    }
    const comparisons = compareVersionList(
      [...succeeded.entries()].map(([version, row]) => ({ version, samples: row.samples })),
    );
    return [...latest.entries()]
      .sort(([a], [b]) => Number(b) - Number(a) || b.localeCompare(a))
      .map(([version, row]) => ({ version, latest: viewReport(row), comparison: comparisons.get(version) ?? null }));
  }

  /** The report and its samples by ascending concurrency: the points of a throughput-vs-latency chart and the rows of Triton's perf table. */
  async get(id: string): Promise<PerfReportView & { samples: PerfSampleView[] }> {
    const row = await this.prisma.perfReport.findUnique({
      where: { id },
      include: { ...reportRelations, samples: { orderBy: { concurrency: "asc" } } },
    });
    if (row === null) throw notFound(`perf report ${id}`);
    return { ...viewReport(row), samples: row.samples.map(viewSample) };
  }
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}

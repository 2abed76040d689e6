import type { PerfTargetKind, Prisma, PrismaClient } from "@operon/db";
import { type PerfAnalyzerCsvRow, parsePerfAnalyzerCsv } from "@operon/perf/perf-analyzer-csv";
import { AppError } from "../../app-error.js";
import { type Actor, recordAudit } from "../audit/audit-log.js";
import type { GatewayClient } from "../gateway/gateway-client.js";
import type { PerfRunSummary } from "./perf-report-views.js";
import { resolvePerfTarget } from "./perf-target.js";

/** The largest CSV accepted (perf_analyzer writes ~100 bytes per step; 1,024 steps fit many times over). */
export const MAX_IMPORTED_CSV_BYTES = 1024 * 1024;

export interface PerfImportInput {
  target: { kind: PerfTargetKind; name: string; version?: string | undefined };
  fileName: string;
  csv: string;
  /** How many instances of the target served the measurement (the scheduler divides the throughput by it). */
  instanceCount: number;
  /**
   * The hardware profile the measurement ran on (the scheduler's hardware fit prices each kind by the reports
   * measured on a profile of that kind); default: the default profile, the host this server runs on.
   */
  hardwareProfileId?: string | undefined;
}

/**
 * Perf reports read from a perf_analyzer CSV (`perf_analyzer -f`, or
 * `operon perf -f`), for measurements made elsewhere: another host, a
 * Triton server, a load test of the real deployment. The report is stored
 * as a SUCCEEDED run with trigger IMPORTED and one sample per row, so the
 * report page, version comparisons, costs and the resource scheduler's
 * capacity read it as they read a measured one. The target must be served
 * now (its links and max_batch_size come from the gateway, as for a run).
 */
export class PerfImports {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly gateway: GatewayClient,
  ) {}

  async importCsv(actor: Actor, input: PerfImportInput): Promise<{ id: string }> {
    if (Buffer.byteLength(input.csv) > MAX_IMPORTED_CSV_BYTES) {
      throw invalid("csv", `the file is larger than ${MAX_IMPORTED_CSV_BYTES / 1024} KiB`);
    }
    let rows: PerfAnalyzerCsvRow[];
    try {
      rows = parsePerfAnalyzerCsv(input.csv);
    } catch (error) {
      throw invalid("csv", `${input.fileName}: ${error instanceof Error ? error.message : String(error)}`);
    }
    const links = await resolvePerfTarget(this.prisma, this.gateway, input.target, 1);
    if (input.hardwareProfileId !== undefined) {
      const profile = await this.prisma.hardwareProfile.findUnique({
        where: { id: input.hardwareProfileId },
        select: { id: true },
      });
      if (profile === null)
        throw invalid("hardwareProfileId", `no hardware profile has id '${input.hardwareProfileId}'`);
      links.hardwareProfileId = profile.id;
    }
    const now = new Date();
    const summary = summaryOf(rows, input, now);
    return this.prisma.$transaction(async (tx) => {
      const created = await tx.perfReport.create({
        data: {
          targetKind: input.target.kind,
          targetName: input.target.name,
          targetVersion: input.target.version ?? null,
          ...links,
          createdById: actor.userId,
          status: "SUCCEEDED",
          trigger: "IMPORTED",
          cause: `imported from ${input.fileName}`.slice(0, 500),
          summary: summary as unknown as Prisma.InputJsonObject,
          startedAt: now,
          finishedAt: now,
        },
      });
      await tx.perfSample.createMany({
        data: rows.map((row) => ({
          reportId: created.id,
          concurrency: row.concurrency,
          batchSize: 1,
          throughput: row.throughputInferPerSec,
          latencyAvgUs: row.avgLatencyUs ?? null,
          latencyP50Us: row.latencyUs.p50,
          latencyP90Us: row.latencyUs.p90,
          latencyP95Us: row.latencyUs.p95,
          latencyP99Us: row.latencyUs.p99,
          queueUs: row.server?.queueUs ?? null,
          computeUs:
            row.server !== undefined
              ? row.server.computeInputUs + row.server.computeInferUs + row.server.computeOutputUs
              : null,
          errorCount: 0,
        })),
      });
      await recordAudit(tx, actor, {
        action: "perf.import",
        targetType: "PerfReport",
        targetId: created.id,
        after: {
          target: input.target,
          fileName: input.fileName,
          steps: rows.length,
          instanceCount: input.instanceCount,
        },
      });
      return { id: created.id };
    });
  }
}

/** The report's summary: what a CSV knows (no request counts, no stability, no inputs); the scheduler reads imported.instanceCount. */
function summaryOf(rows: PerfAnalyzerCsvRow[], input: PerfImportInput, at: Date): PerfRunSummary {
  const best = rows.reduce<PerfAnalyzerCsvRow | undefined>(
    (top, row) => (top === undefined || row.throughputInferPerSec > top.throughputInferPerSec ? row : top),
    undefined,
  );
  return {
    version: input.target.version ?? "",
    protocol: "http",
    maxBatchSize: 0,
    inputs: [],
    startedAt: at.toISOString(),
    finishedAt: at.toISOString(),
    totalRequests: 0,
    totalErrors: 0,
    imported: { fileName: input.fileName, instanceCount: input.instanceCount },
    best:
      best === undefined
        ? null
        : { concurrency: best.concurrency, throughput: best.throughputInferPerSec, latencyP99Us: best.latencyUs.p99 },
    errorSamples: [],
    steps: rows.map((row) => ({
      concurrency: row.concurrency,
      requests: 0,
      errors: 0,
      stable: null,
      throughputRequestsPerSec: row.throughputInferPerSec,
      server: row.server !== undefined ? { ...row.server, batchSizes: {} } : null,
    })),
  };
}

function invalid(path: string, message: string): AppError {
  return new AppError("VALIDATION_FAILED", message, { fieldErrors: [{ path, message }] });
}

import type { PrismaClient } from "@operon/db";
import { parseJsonColumn } from "../json-column.js";
import { perfRunSummarySchema } from "../perf/perf-report-views.js";
import { gpuPriceShareOf } from "../costs/cost-model.js";
import type { HardwareKindName, KindProfile } from "./hardware-fit.js";

/**
 * Per-instance throughput at the p99 budget from each model's latest successful perf report: the best step whose
 * p99 is within the budget, divided by the instances the report ran with (one when it does not say). The summary
 * is parsed, not cast: a row that holds something else is an error naming it.
 */
export async function reportCapacities(
  prisma: PrismaClient,
  models: string[],
  p99BudgetMs: number,
): Promise<Map<string, number> & { overBudget: Set<string> }> {
  // overBudget: models whose latest report has no step within the budget (the console says so).
  const capacities = Object.assign(new Map<string, number>(), { overBudget: new Set<string>() });
  if (models.length === 0) return capacities;
  const reports = await prisma.perfReport.findMany({
    where: { targetKind: "MODEL", status: "SUCCEEDED", targetName: { in: models } },
    orderBy: { createdAt: "desc" },
    distinct: ["targetName"],
    include: { samples: true },
  });
  const budgetUs = p99BudgetMs * 1000;
  for (const report of reports) {
    const within = report.samples.filter(
      (sample) => sample.errorCount === 0 && sample.latencyP99Us !== null && sample.latencyP99Us <= budgetUs,
    );
    if (within.length === 0) {
      capacities.overBudget.add(report.targetName);
      continue;
    }
    const best = Math.max(...within.map((sample) => sample.throughput));
    const summary =
      report.summary === null
        ? null
        : parseJsonColumn(perfRunSummarySchema, report.summary, {
            table: "PerfReport",
            column: "summary",
            id: report.id,
          });
    // Only an imported CSV's report says how many instances it measured (imported.instanceCount); others count one.
    const instanceCount = summary?.imported?.instanceCount ?? 0;
    const instances = instanceCount > 0 ? instanceCount : 1;
    if (best > 0) capacities.set(report.targetName, best / instances);
  }
  return capacities;
}

/**
 * Per model and hardware kind (hardware-fit.ts): the latest successful perf report measured on a profile of that
 * kind, its profile (the price), and its per-instance capacity at the p99 budget (null: no step within it). Reports
 * without a profile count for no kind.
 */
export async function kindCapacities(
  prisma: PrismaClient,
  models: string[],
  p99BudgetMs: number,
): Promise<Map<string, Map<HardwareKindName, { profile: KindProfile; capacityRps: number | null }>>> {
  const out = new Map<string, Map<HardwareKindName, { profile: KindProfile; capacityRps: number | null }>>();
  if (models.length === 0) return out;
  const reports = await prisma.perfReport.findMany({
    where: { targetKind: "MODEL", status: "SUCCEEDED", targetName: { in: models }, hardwareProfileId: { not: null } },
    orderBy: { createdAt: "desc" },
    include: { samples: true, hardwareProfile: true },
  });
  const budgetUs = p99BudgetMs * 1000;
  for (const report of reports) {
    const profile = report.hardwareProfile;
    if (profile === null) continue;
    const kind = profile.kind as HardwareKindName;
    const byKind = out.get(report.targetName) ?? new Map();
    out.set(report.targetName, byKind);
    if (byKind.has(kind)) continue; // newest first: the first one of each kind is its latest
    const within = report.samples.filter(
      (sample) => sample.errorCount === 0 && sample.latencyP99Us !== null && sample.latencyP99Us <= budgetUs,
    );
    const summary =
      report.summary === null
        ? null
        : parseJsonColumn(perfRunSummarySchema, report.summary, {
            table: "PerfReport",
            column: "summary",
            id: report.id,
          });
    const instances = Math.max(1, summary?.imported?.instanceCount ?? 1);
    const best = within.length === 0 ? 0 : Math.max(...within.map((sample) => sample.throughput));
    byKind.set(kind, {
      profile: {
        name: profile.name,
        costPerHour: Number(profile.costPerHour),
        currency: profile.currency,
        gpuPriceShare: gpuPriceShareOf(profile),
        gpuCount: profile.gpuCount,
      },
      capacityRps: best > 0 ? best / instances : null,
    });
  }
  return out;
}

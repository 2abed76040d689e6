import type { PrismaClient } from "@operon/db";

/**
 * Per-instance throughput at the p99 budget from each model's latest successful perf report: the best step whose
 * p99 is within the budget, divided by the instances the report ran with (one when it does not say).
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
    const summary = report.summary as { instanceCount?: unknown } | null;
    const instances =
      typeof summary?.instanceCount === "number" && summary.instanceCount > 0 ? summary.instanceCount : 1;
    if (best > 0) capacities.set(report.targetName, best / instances);
  }
  return capacities;
}

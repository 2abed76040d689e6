import type { ChartRow } from "@/features/charts/chart-series";
import { perMillionInferences } from "@/lib/number-format";
import type { CostReport } from "./overview-types";

export type ModelCostRow = CostReport["models"][number];

/** The hardware profile every row is on, or undefined when the report spans several. */
export function singleProfile(report: CostReport): string | undefined {
  const names = new Set(report.models.map((entry) => entry.profileName));
  return names.size === 1 ? [...names][0] : undefined;
}

/** A bar's name: the model, and its profile when the report has several. */
export function costCategory(entry: ModelCostRow, withProfile: boolean): string {
  return withProfile ? `${entry.model} · ${entry.profileName}` : entry.model;
}

/** The currency the report is in, or undefined when profiles use several. */
export function reportCurrency(report: CostReport): string | undefined {
  const currencies = new Set(report.models.map((entry) => entry.currency));
  return currencies.size === 1 ? [...currencies][0] : undefined;
}

/** The bars of one cost chart (per hour, or per million inferences): models with a cost above 0, most expensive first. */
export function costChartRows(report: CostReport, key: "costPerHour" | "costPerMillionInferences"): ChartRow[] {
  const withProfile = singleProfile(report) === undefined;
  const value = (entry: ModelCostRow) =>
    (key === "costPerHour" ? entry.costPerHour : perMillionInferences(entry.costPer1000Inferences)) ?? 0;
  return report.models
    .filter((entry) => value(entry) > 0)
    .sort((a, b) => value(b) - value(a))
    .map((entry) => ({ category: costCategory(entry, withProfile), [key]: value(entry) }));
}

import type { RouterOutputs } from "@/lib/api-types";

export type CurrentUsage = RouterOutputs["metrics"]["current"];
export type CurrentModel = CurrentUsage["models"][number];
export type UsageSeries = RouterOutputs["metrics"]["timeSeries"];
export type SeriesPoint = UsageSeries["overall"][number];
export type CostReport = RouterOutputs["metrics"]["costs"];

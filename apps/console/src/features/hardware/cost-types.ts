import type { RouterOutputs } from "@/lib/api-types";

export type CostReport = RouterOutputs["metrics"]["costs"];
export type ModelCost = CostReport["models"][number];
export type ProfileCost = CostReport["profiles"][number];

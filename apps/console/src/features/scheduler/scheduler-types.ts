import type { RouterOutputs } from "@/lib/api-types";

export type SchedulerStatus = RouterOutputs["scheduler"]["status"];
export type SchedulerModel = SchedulerStatus["models"][number];
export type SchedulerDecisionRow = RouterOutputs["scheduler"]["decisions"]["decisions"][number];

/** How the decisions table names an action. */
export const ACTION_LABELS: Record<SchedulerDecisionRow["action"], string> = {
  SCALE_UP: "Scaled up",
  SCALE_DOWN: "Scaled down",
  UNLOAD: "Unloaded (LRU)",
  LOAD: "Loaded on demand",
  HOLD: "Held (does not fit)",
  MOVE: "Moved (hardware fit)",
};

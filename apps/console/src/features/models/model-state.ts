import type { RouterOutputs } from "@/lib/api-types";

export type ModelSummary = RouterOutputs["models"]["list"]["models"][number];
export type ModelState = ModelSummary["state"];

/** States the gateway is still moving out of: worth asking again soon. */
const TRANSIENT: readonly ModelState[] = ["LOADING", "UNLOADING"];

export function isTransient(state: ModelState): boolean {
  return TRANSIENT.includes(state);
}

/** How often a page showing models asks again while one of them is changing state. */
export const MODEL_POLL_MS = 2_000;

export const STATE_LABEL: Record<ModelState, string> = {
  READY: "Ready",
  UNAVAILABLE: "Unavailable",
  LOADING: "Loading",
  UNLOADING: "Unloading",
  UNKNOWN: "Unknown",
};

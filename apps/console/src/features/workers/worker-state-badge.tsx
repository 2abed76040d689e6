import type { RouterOutputs } from "@/lib/api-types";

type WorkerState = RouterOutputs["workers"]["list"]["workers"][number]["state"];

const LABEL: Record<WorkerState, string> = { READY: "Ready", RESTARTING: "Restarting", FAILED: "Failed" };
const TONE: Record<WorkerState, string> = { READY: "ready", RESTARTING: "loading", FAILED: "unavailable" };

export function WorkerStateBadge({ state }: { state: WorkerState }) {
  return <span className={`badge state-badge state-${TONE[state]}`}>{LABEL[state]}</span>;
}

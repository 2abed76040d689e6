import { STATE_LABEL, type ModelState } from "./model-state";

/** A model's (or version's) state as the gateway reports it, with the reason when it is not ready. */
export function ModelStateBadge({ state, reason }: { state: ModelState; reason?: string | undefined }) {
  return (
    <span className="model-state">
      <span className={`badge state-badge state-${state.toLowerCase()}`}>{STATE_LABEL[state]}</span>
      {reason ? <span className="model-state-reason">{reason}</span> : null}
    </span>
  );
}

import { formatLatencyUs } from "@/lib/number-format";
import type { RouterOutputs } from "@/lib/api-types";
import { TryOutputs } from "./try-outputs";

type TryRunStep = RouterOutputs["operators"]["tryRun"]["steps"][number];

/**
 * Each step's start and duration as bars on one time scale (0 = the first
 * step's start), in milliseconds; skipped steps have no bar. Under a model
 * step that ran, its outputs fold out (closed by default: a step may show
 * up to 256 values per tensor, and a long operator many steps).
 */
export function StepTimeline({ steps }: { steps: readonly TryRunStep[] }) {
  const end = Math.max(1, ...steps.map((step) => step.endUs ?? 0));
  return (
    <figure className="step-timeline" aria-labelledby="step-times-title">
      <h4 id="step-times-title" className="chart-title">
        Steps: time (ms) and outputs
      </h4>
      <ol className="timeline-list">
        {steps.map((step) => (
          <li key={step.name} className="timeline-row">
            <span className="timeline-name">
              {step.name}
              <span className="cell-sub">
                {step.model ? `${step.kind} ${step.model}` : step.kind} · {step.status}
              </span>
            </span>
            <span className="timeline-track" aria-hidden="true">
              {step.startUs !== null && step.durationUs !== null ? (
                <span
                  className={`timeline-bar timeline-bar-${step.status === "ok" ? "ok" : "other"}`}
                  style={{
                    left: `${(step.startUs / end) * 100}%`,
                    width: `${Math.max(0.5, (step.durationUs / end) * 100)}%`,
                  }}
                />
              ) : null}
            </span>
            <span className="timeline-figures">
              {step.startUs !== null && step.durationUs !== null
                ? `start ${formatLatencyUs(step.startUs)}, duration ${formatLatencyUs(step.durationUs)}`
                : "did not run"}
            </span>
            {step.outputs.length > 0 ? (
              <details className="timeline-outputs">
                <summary>
                  Outputs<span className="visually-hidden"> of step {step.name}</span>:{" "}
                  {step.outputs.map((output) => output.name).join(", ")}
                </summary>
                <TryOutputs outputs={step.outputs} caption={`Outputs of step ${step.name}`} maxValues={Infinity} />
              </details>
            ) : null}
          </li>
        ))}
      </ol>
    </figure>
  );
}

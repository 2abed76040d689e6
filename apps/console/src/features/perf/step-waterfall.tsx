"use client";

import { useId, useState } from "react";
import { formatInteger, formatLatencyUs } from "@/lib/number-format";
import type { PerfSample } from "./perf-types";

type StepTime = NonNullable<PerfSample["stepTimes"]>[number];

/**
 * An operator's report, step by step (issue 21): at one measured
 * concurrency, each step's average time per run as a bar on the request's
 * time scale, placed on the spec's critical path (a step starts when what it
 * waits for ends; see the API's operator-step-times.ts). Starts at the
 * concurrency with the best throughput; a select picks another. Steps that
 * did not run at that level say so.
 */
export function StepWaterfall({ samples }: { samples: readonly PerfSample[] }) {
  const id = useId();
  const timed = samples.filter((sample) => sample.stepTimes !== null && sample.stepTimes.length > 0);
  const best = timed.reduce<PerfSample | undefined>(
    (top, sample) => (top === undefined || sample.throughput > top.throughput ? sample : top),
    undefined,
  );
  const [chosen, setChosen] = useState<number | undefined>(undefined);
  if (best === undefined) return null;
  const sample = timed.find((candidate) => candidate.concurrency === chosen) ?? best;
  const steps = sample.stepTimes!;
  const end = Math.max(1, ...steps.map((step) => (step.startUs ?? 0) + (step.durationUs ?? 0)));
  return (
    <section className="card" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Steps</h2>
      <p className="muted">
        Each step&apos;s average time per run while this concurrency was measured (the gateway&apos;s per-step
        counters), laid out as a waterfall: a step starts when the steps it waits for end.
      </p>
      {timed.length > 1 ? (
        <div className="field">
          <label htmlFor={`${id}-concurrency`}>Concurrency</label>
          <select
            id={`${id}-concurrency`}
            value={sample.concurrency}
            onChange={(event) => setChosen(Number(event.target.value))}
          >
            {timed.map((candidate) => (
              <option key={candidate.concurrency} value={candidate.concurrency}>
                {candidate.concurrency}
                {candidate === best ? " (best throughput)" : ""}
              </option>
            ))}
          </select>
        </div>
      ) : null}
      <figure className="step-timeline" aria-labelledby={`${id}-figure`}>
        <h3 id={`${id}-figure`} className="chart-title">
          Time per step (ms) at concurrency {sample.concurrency}
        </h3>
        <ol className="timeline-list">
          {steps.map((step) => (
            <WaterfallRow key={step.step} step={step} end={end} />
          ))}
        </ol>
      </figure>
    </section>
  );
}

function WaterfallRow({ step, end }: { step: StepTime; end: number }) {
  const ran = step.startUs !== null && step.durationUs !== null;
  return (
    <li className="timeline-row">
      <span className="timeline-name">
        {step.step}
        <span className="cell-sub">{step.model !== null ? `${step.kind} ${step.model}` : step.kind}</span>
      </span>
      <span className="timeline-track" aria-hidden="true">
        {ran ? (
          <span
            className="timeline-bar timeline-bar-ok"
            style={{
              left: `${(step.startUs! / end) * 100}%`,
              width: `${Math.max(0.5, (step.durationUs! / end) * 100)}%`,
            }}
          />
        ) : null}
      </span>
      <span className="timeline-figures">
        {ran
          ? `start ${formatLatencyUs(step.startUs)}, duration ${formatLatencyUs(step.durationUs)}, ${formatInteger(step.runs)} runs`
          : "did not run at this concurrency"}
      </span>
    </li>
  );
}

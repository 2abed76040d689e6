import { z } from "zod";
import type { OperatorSpec } from "@operon/operator-spec/operator-spec-schema";
import { analyzeOperator } from "@operon/operator-spec/operator-structure";
import { parsePrometheusText } from "../usage/prometheus-text.js";

/**
 * An operator's perf report covers its steps: the time each step took,
 * averaged over its runs while one load level was measured, laid out as a
 * waterfall. The durations are the gateway's per-step counters
 * (operon_operator_step_duration_us and operon_operator_step_executions_total,
 * written by its operator runner: a model step from its start, after any
 * in-flight cap wait, to its answer), read before and after the level; the
 * starts come from the spec's dependencies: a step starts when the last
 * step it waits for ends (the producers of the tensors it reads, the route
 * that activates it, the exits listed before it), so the waterfall is the
 * average request's critical path, not one traced request.
 */
export const stepTimeSchema = z.object({
  step: z.string(),
  kind: z.enum(["model", "route", "exit"]),
  /** A model step's model; null for routes and exits. */
  model: z.string().nullable(),
  /** Where its bar starts, from the request's start, in µs; null when it did not run at this level. */
  startUs: z.number().nullable(),
  /** Its average duration per run, in µs; null when it did not run at this level. */
  durationUs: z.number().nullable(),
  /** How many times it ran while the level was measured (a routed-around step may run less than others). */
  runs: z.number(),
});
export type StepTime = z.infer<typeof stepTimeSchema>;
export const stepTimesSchema = z.array(stepTimeSchema);

/** Cumulative counters of one operator's steps, by step id. */
export type StepCounters = Map<string, { durationUs: number; runs: number }>;

/** The operator's per-step counters in the gateway's Prometheus text (steps absent from it are absent here). */
export function readStepCounters(metricsText: string, operator: string): StepCounters {
  const counters: StepCounters = new Map();
  for (const sample of parsePrometheusText(metricsText)) {
    if (sample.labels["operator"] !== operator) continue;
    const step = sample.labels["step"];
    if (step === undefined) continue;
    const entry = counters.get(step) ?? { durationUs: 0, runs: 0 };
    if (sample.name === "operon_operator_step_duration_us") entry.durationUs += sample.value;
    else if (sample.name === "operon_operator_step_executions_total") entry.runs += sample.value;
    else continue;
    counters.set(step, entry);
  }
  return counters;
}

/**
 * Each step's average time between two readings of the counters, placed on
 * the spec's critical path, in the spec's order. A counter that went down
 * (the operator was registered again) counts from zero.
 */
export function stepWaterfall(spec: OperatorSpec, before: StepCounters, after: StepCounters): StepTime[] {
  const graph = analyzeOperator(spec);
  const ends = new Map<string, number>();
  const times: StepTime[] = [];
  for (const step of spec.steps) {
    const node = graph.nodes.get(step.id)!;
    const now = after.get(step.id) ?? { durationUs: 0, runs: 0 };
    const then = before.get(step.id) ?? { durationUs: 0, runs: 0 };
    const reset = now.runs < then.runs;
    const runs = reset ? now.runs : now.runs - then.runs;
    const totalUs = reset ? now.durationUs : now.durationUs - then.durationUs;
    const durationUs = runs > 0 ? Math.round((totalUs / runs) * 10) / 10 : null;
    // What it waits for: producers of what it reads (steps only: operator inputs are there at 0), its route, earlier exits.
    const waitsFor = [
      ...node.reads.flatMap((tensor) => graph.producers.get(tensor) ?? []),
      ...(node.gate !== undefined ? [node.gate] : []),
      ...node.guards,
    ].filter((id) => id !== step.id);
    const startUs = Math.max(0, ...waitsFor.map((id) => ends.get(id) ?? 0));
    if (durationUs !== null) ends.set(step.id, startUs + durationUs);
    times.push({
      step: step.id,
      kind: step.kind,
      model: step.kind === "model" ? step.model : null,
      startUs: durationUs !== null ? Math.round(startUs * 10) / 10 : null,
      durationUs,
      runs,
    });
  }
  return times;
}

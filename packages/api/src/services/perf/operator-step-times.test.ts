import { describe, expect, it } from "vitest";
import { OperatorSpecSchema } from "@operon/operator-spec/operator-spec-schema";
import { readStepCounters, stepWaterfall } from "./operator-step-times.js";

const tensor = (name: string) => ({ name, datatype: "FP32", dims: [4] });
/** pre → (left, right in parallel) → join: join starts when the slower of the two ends. */
const SPEC = OperatorSpecSchema.parse({
  name: "fan",
  inputs: [tensor("x")],
  outputs: [tensor("y")],
  steps: [
    { id: "pre", kind: "model", model: "m_pre", inputs: { IN: "x" }, outputs: { OUT: "p" } },
    { id: "left", kind: "model", model: "m_l", inputs: { IN: "p" }, outputs: { OUT: "l" } },
    { id: "right", kind: "model", model: "m_r", inputs: { IN: "p" }, outputs: { OUT: "r" } },
    { id: "join", kind: "model", model: "m_j", inputs: { A: "l", B: "r" }, outputs: { OUT: "y" } },
  ],
});

const metrics = (lines: Array<[string, string, number, number]>) =>
  [
    "# HELP operon_operator_step_duration_us Cumulative time operator steps ran",
    "# TYPE operon_operator_step_duration_us counter",
    ...lines.map(([op, step, us]) => `operon_operator_step_duration_us{operator="${op}",step="${step}"} ${us}`),
    "# TYPE operon_operator_step_executions_total counter",
    ...lines.map(
      ([op, step, , runs]) => `operon_operator_step_executions_total{operator="${op}",step="${step}"} ${runs}`,
    ),
  ].join("\n");

describe("operator step times", () => {
  it("reads one operator's per-step counters from the gateway's metrics", () => {
    const counters = readStepCounters(
      metrics([
        ["fan", "pre", 1000, 10],
        ["other", "pre", 99, 1],
      ]),
      "fan",
    );
    expect([...counters]).toEqual([["pre", { durationUs: 1000, runs: 10 }]]);
  });

  it("averages each step over the level and lays the steps out on the spec's critical path", () => {
    const before = readStepCounters(
      metrics([
        ["fan", "pre", 500, 5],
        ["fan", "left", 0, 0],
        ["fan", "right", 0, 0],
        ["fan", "join", 0, 0],
      ]),
      "fan",
    );
    const after = readStepCounters(
      metrics([
        ["fan", "pre", 1500, 15], // 100 µs per run
        ["fan", "left", 3000, 10], // 300
        ["fan", "right", 5000, 10], // 500
        ["fan", "join", 200, 10], // 20
      ]),
      "fan",
    );
    expect(stepWaterfall(SPEC, before, after)).toEqual([
      { step: "pre", kind: "model", model: "m_pre", startUs: 0, durationUs: 100, runs: 10 },
      { step: "left", kind: "model", model: "m_l", startUs: 100, durationUs: 300, runs: 10 },
      { step: "right", kind: "model", model: "m_r", startUs: 100, durationUs: 500, runs: 10 },
      { step: "join", kind: "model", model: "m_j", startUs: 600, durationUs: 20, runs: 10 },
    ]);
  });

  it("gives a step that did not run no bar, and counts from zero after the counters reset", () => {
    const before = readStepCounters(metrics([["fan", "pre", 9000, 90]]), "fan");
    const after = readStepCounters(
      metrics([
        ["fan", "pre", 400, 4],
        ["fan", "left", 800, 4],
      ]),
      "fan",
    );
    const times = stepWaterfall(SPEC, before, after);
    expect(times[0]).toMatchObject({ step: "pre", startUs: 0, durationUs: 100, runs: 4 });
    expect(times[1]).toMatchObject({ step: "left", startUs: 100, durationUs: 200, runs: 4 });
    expect(times[2]).toMatchObject({ step: "right", startUs: null, durationUs: null, runs: 0 });
    // join waits for left only as far as anything ran: right never ended.
    expect(times[3]).toMatchObject({ step: "join", startUs: null, durationUs: null });
  });
});

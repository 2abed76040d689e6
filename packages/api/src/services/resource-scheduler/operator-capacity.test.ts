import { describe, expect, it } from "vitest";
import {
  callsPerModel,
  modelStepsOf,
  operatorCapacity,
  operatorDemands,
  type OperatorStep,
} from "./operator-capacity.js";

const PIPE: OperatorStep[] = [
  { step: "first", model: "fast" },
  { step: "second", model: "slow" },
];

describe("modelStepsOf", () => {
  it("takes the model steps of a spec in order and skips routes, exits and malformed steps", () => {
    expect(
      modelStepsOf({
        steps: [
          { id: "x", kind: "exit", input: "IN", when: { lessThan: 0 }, outputs: {} },
          { id: "a", kind: "model", model: "m1" },
          { id: "r", kind: "route", input: "IN", cases: [], default: [] },
          { id: "b", kind: "model", model: "m2" },
          { id: 3, kind: "model", model: "m3" },
          { kind: "model", model: "m4" },
          "junk",
        ],
      }),
    ).toEqual([
      { step: "a", model: "m1" },
      { step: "b", model: "m2" },
    ]);
    expect(modelStepsOf(null)).toEqual([]);
    expect(modelStepsOf({ steps: "no" })).toEqual([]);
  });
});

describe("operatorCapacity", () => {
  it("is the least step capacity; that step is the bottleneck", () => {
    const rates: Record<string, number> = { fast: 90, slow: 30 };
    const capacity = operatorCapacity("pipe", PIPE, (model) => ({
      instances: 1,
      perInstanceRps: rates[model]!,
      source: "report",
    }));
    expect(capacity.capacityRps).toBe(30);
    expect(capacity.bottleneckSteps).toEqual(["second"]);
    expect(capacity.steps.map((step) => [step.step, step.capacityRps, step.bottleneck])).toEqual([
      ["first", 90, false],
      ["second", 30, true],
    ]);
  });

  it("multiplies by instances and divides by the calls of a model two steps share", () => {
    const steps: OperatorStep[] = [
      { step: "a", model: "shared" },
      { step: "b", model: "other" },
      { step: "c", model: "shared" },
    ];
    expect(callsPerModel(steps)).toEqual(
      new Map([
        ["shared", 2],
        ["other", 1],
      ]),
    );
    const capacity = operatorCapacity("op", steps, (model) =>
      model === "shared"
        ? { instances: 3, perInstanceRps: 20, source: "report" }
        : { instances: 2, perInstanceRps: 10, source: "default" },
    );
    // shared: 3 × 20 / 2 = 30 per step; other: 2 × 10 = 20.
    expect(capacity.steps.map((step) => step.capacityRps)).toEqual([30, 20, 30]);
    expect(capacity.bottleneckSteps).toEqual(["b"]);
    expect(capacity.steps[1]!.capacitySource).toBe("default");
  });

  it("names every tied step, gives 0 for a step whose model runs no instance, null without model steps", () => {
    const tied = operatorCapacity("t", PIPE, () => ({ instances: 1, perInstanceRps: 10, source: "report" }));
    expect(tied.bottleneckSteps).toEqual(["first", "second"]);
    const parked = operatorCapacity("p", PIPE, (model) => ({
      instances: model === "slow" ? 0 : 1,
      perInstanceRps: 10,
      source: "report",
    }));
    expect(parked.capacityRps).toBe(0);
    expect(parked.bottleneckSteps).toEqual(["second"]);
    expect(operatorCapacity("none", [], () => ({ instances: 1, perInstanceRps: 1, source: "report" }))).toEqual({
      operator: "none",
      capacityRps: null,
      bottleneckSteps: [],
      steps: [],
    });
  });
});

describe("operatorDemands", () => {
  const perInstance = (model: string): number => (model === "fast" ? 90 : 30);

  it("sizes each step model for the operator's arrivals, not its completions (which its bottleneck caps)", () => {
    const { operators, models } = operatorDemands(
      [{ operator: "pipe", steps: PIPE, completedRps: 30, arrivalRps: 50, saturated: false }],
      new Map([
        ["fast", 30],
        ["slow", 30],
      ]),
      perInstance,
      4,
    );
    expect(operators).toEqual([
      { operator: "pipe", demandRps: 50, basis: "50.0 req/s arriving (30.0 completed)", cappedAtRps: null },
    ]);
    expect(models.get("fast")).toEqual({
      model: "fast",
      demandRps: 50,
      directRps: 0,
      fromOperators: [{ operator: "pipe", rps: 50 }],
    });
    expect(models.get("slow")!.demandRps).toBe(50);
  });

  it("sums the operators sharing a model with its direct requests", () => {
    const { models } = operatorDemands(
      [
        { operator: "a", steps: [{ step: "s", model: "shared" }], completedRps: 10, arrivalRps: 10, saturated: false },
        {
          operator: "b",
          steps: [
            { step: "s1", model: "shared" },
            { step: "s2", model: "shared" },
          ],
          completedRps: 5,
          arrivalRps: 8,
          saturated: false,
        },
      ],
      // 10 (a) + 2 × 5 (b) completed through operators, 7 direct.
      new Map([["shared", 27]]),
      () => 100,
      4,
    );
    expect(models.get("shared")).toEqual({
      model: "shared",
      demandRps: 7 + 10 + 16,
      directRps: 7,
      fromOperators: [
        { operator: "b", rps: 16 },
        { operator: "a", rps: 10 },
      ],
    });
  });

  it("doubles a saturated closed-loop operator's completions, and caps the demand at what its bottleneck can reach", () => {
    const saturated = operatorDemands(
      [{ operator: "pipe", steps: PIPE, completedRps: 30, arrivalRps: 30, saturated: true }],
      new Map(),
      perInstance,
      4,
    );
    expect(saturated.operators[0]!.demandRps).toBe(60);
    expect(saturated.operators[0]!.basis).toMatch(/^saturated/);
    // slow: 30 × 4 instances = 120 at most; the fast step is not sized beyond it.
    const capped = operatorDemands(
      [{ operator: "pipe", steps: PIPE, completedRps: 120, arrivalRps: 500, saturated: false }],
      new Map(),
      perInstance,
      4,
    );
    expect(capped.operators[0]).toMatchObject({ demandRps: 120, cappedAtRps: 120 });
    expect(capped.models.get("fast")!.demandRps).toBe(120);
    expect(capped.operators[0]!.basis).toMatch(/capped at 120 req\/s/);
  });

  it("never counts a draining backlog (arrivals below 0) as negative demand", () => {
    const { operators } = operatorDemands(
      [{ operator: "pipe", steps: PIPE, completedRps: 10, arrivalRps: -5, saturated: false }],
      new Map(),
      perInstance,
      4,
    );
    expect(operators[0]!.demandRps).toBe(0);
  });
});

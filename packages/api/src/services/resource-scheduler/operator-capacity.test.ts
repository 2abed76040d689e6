import { describe, expect, it } from "vitest";
import {
  callsPerModel,
  measureOperatorTraffic,
  modelStepsOf,
  operatorCapacity,
  operatorDemands,
  type OperatorSample,
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
      [{ operator: "pipe", steps: PIPE, completedRps: 30, arrivalRps: 50, saturated: false, heldModels: ["slow"] }],
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
        {
          operator: "a",
          steps: [{ step: "s", model: "shared" }],
          completedRps: 10,
          arrivalRps: 10,
          saturated: false,
          heldModels: ["slow"],
        },
        {
          operator: "b",
          steps: [
            { step: "s1", model: "shared" },
            { step: "s2", model: "shared" },
          ],
          completedRps: 5,
          arrivalRps: 8,
          saturated: false,
          heldModels: ["shared"],
          callRps: new Map([["shared", 10]]),
        },
      ],
      // 10 (a) + 2 × 5 (b) calls the gateway counted through operators, 7 direct.
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
      [{ operator: "pipe", steps: PIPE, completedRps: 30, arrivalRps: 30, saturated: true, heldModels: ["slow"] }],
      new Map(),
      perInstance,
      4,
    );
    expect(saturated.operators[0]!.demandRps).toBe(60);
    expect(saturated.operators[0]!.basis).toMatch(/^saturated/);
    // slow: 30 × 4 instances = 120 at most; the fast step is not sized beyond it.
    const capped = operatorDemands(
      [{ operator: "pipe", steps: PIPE, completedRps: 120, arrivalRps: 500, saturated: false, heldModels: ["slow"] }],
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
      [{ operator: "pipe", steps: PIPE, completedRps: 10, arrivalRps: -5, saturated: false, heldModels: ["slow"] }],
      new Map(),
      perInstance,
      4,
    );
    expect(operators[0]!.demandRps).toBe(0);
  });
});

/**
 * The e2e scenario (e2e/operator-capacity.test.ts) in figures a loaded host measures: `fast` carries 51 req/s per
 * instance, `slow` 30 (the measured ratio narrows from 3× to 1.7×), and an open-loop client sends the operator
 * 37.8 req/s (min(1.6 × 30, 51 / 1.35)). With 25 % headroom one `fast` instance carries up to 40.8 req/s: its
 * demand must stay the arrivals, whatever the backlog in front of `slow` does.
 */
describe("an operator whose second step is its bottleneck, period by period", () => {
  const RATES: Record<string, number> = { fast: 51, slow: 30 };
  const RPS = 37.8;
  const FAST_CARRIES = RATES["fast"]! / 1.25;
  const capacityWith = (slowInstances: number) =>
    operatorCapacity("pipe", PIPE, (model) => ({
      instances: model === "slow" ? slowInstances : 1,
      perInstanceRps: RATES[model]!,
      source: "report",
    }));
  /** One 1 s period: the samples before and now, `fast`/`slow` completions, the queue at `slow`. */
  const period = (p: {
    slowBefore: number;
    slowNow: number;
    before: OperatorSample;
    now: OperatorSample;
    completedRps: number;
    modelRps: { fast: number; slow: number };
    slowQueued: number;
    fastQueued?: number;
  }) => {
    const traffic = measureOperatorTraffic({
      capacity: capacityWith(p.slowNow),
      steps: PIPE,
      completedRps: p.completedRps,
      intervalSecs: 1,
      before: p.before,
      now: p.now,
      instancesBefore: new Map([
        ["fast", 1],
        ["slow", p.slowBefore],
      ]),
      queued: new Map([
        ["fast", p.fastQueued ?? 0],
        ["slow", p.slowQueued],
      ]),
    });
    const demands = operatorDemands([traffic], new Map(Object.entries(p.modelRps)), (model) => RATES[model]!, 4);
    return { traffic, fast: demands.models.get("fast")!, slow: demands.models.get("slow")! };
  };

  it("while `slow` is backlogged, `fast` (which completes the arrivals) is sized for the arrivals, not 2 × arrivals − C", () => {
    // fast completes all 37.8 arriving; the operator (and slow) 30; 7.8 more wait in front of slow each second.
    const backlogged = {
      slowBefore: 1,
      slowNow: 1,
      before: { inFlight: 20, modelCalls: { fast: 1000, slow: 980 } },
      now: { inFlight: 27.8, modelCalls: { fast: 1037.8, slow: 1010 } },
      completedRps: 30,
      modelRps: { fast: 37.8, slow: 30 },
      slowQueued: 26,
    };
    const { traffic, fast, slow } = period(backlogged);
    expect(traffic.arrivalRps).toBeCloseTo(RPS);
    expect(traffic.saturated).toBe(false);
    expect(fast.directRps).toBeCloseTo(0);
    expect(fast.demandRps).toBeCloseTo(RPS);
    expect(fast.demandRps).toBeLessThanOrEqual(FAST_CARRIES);
    expect(slow.demandRps).toBeCloseTo(RPS);
    // A gateway without per-model call counts: the operator's calls are taken as max(completed, arrivals) × calls.
    const older = period({ ...backlogged, before: { inFlight: 20 }, now: { inFlight: 27.8 } });
    expect(older.fast.directRps).toBeCloseTo(0);
    expect(older.fast.demandRps).toBeLessThanOrEqual(FAST_CARRIES);
  });

  it("a backlog draining after `slow` grew is neither saturation nor demand on `fast`", () => {
    // slow 1 → 2 instances: the operator completes 56/s (2 × 30, less the host's share) while 37.8 arrive.
    const justScaled = period({
      slowBefore: 1,
      slowNow: 2,
      before: { inFlight: 40, modelCalls: { fast: 2000, slow: 1960 } },
      now: { inFlight: 21.8, modelCalls: { fast: 2037.8, slow: 2016 } },
      completedRps: 56,
      modelRps: { fast: 37.8, slow: 56 },
      slowQueued: 19,
    });
    expect(justScaled.traffic.saturated).toBe(false);
    expect(justScaled.traffic.arrivalRps).toBeCloseTo(RPS);
    expect(justScaled.fast.demandRps).toBeLessThanOrEqual(FAST_CARRIES);
    // The next period: slow kept its 2 instances, the backlog still drains (in flight falls 18 a second).
    const draining = period({
      slowBefore: 2,
      slowNow: 2,
      before: { inFlight: 21.8, modelCalls: { fast: 2037.8, slow: 2016 } },
      now: { inFlight: 3.6, modelCalls: { fast: 2075.6, slow: 2072 } },
      completedRps: 56,
      modelRps: { fast: 37.8, slow: 56 },
      slowQueued: 2,
    });
    expect(draining.traffic.saturated).toBe(false);
    expect(draining.fast.demandRps).toBeLessThanOrEqual(FAST_CARRIES);
    expect(draining.slow.demandRps).toBeCloseTo(RPS);
    // Drained: 2 × 30 > 51, so `fast` is the bottleneck by the reports now, and at 74 % of its capacity a request
    // waits at it now and then. In flight holds steady at 3: an open loop served on time, not saturation.
    const drained = period({
      slowBefore: 2,
      slowNow: 2,
      before: { inFlight: 3.6, modelCalls: { fast: 2075.6, slow: 2072 } },
      now: { inFlight: 3, modelCalls: { fast: 2113.4, slow: 2110.4 } },
      completedRps: 38.4,
      modelRps: { fast: 37.8, slow: 38.4 },
      slowQueued: 0,
      fastQueued: 1,
    });
    expect(capacityWith(2).bottleneckSteps).toEqual(["first"]);
    expect(drained.traffic.heldModels).toEqual(["fast"]);
    expect(drained.traffic.saturated).toBe(false);
    expect(drained.fast.demandRps).toBeCloseTo(RPS);
    expect(drained.fast.demandRps).toBeLessThanOrEqual(FAST_CARRIES);
  });

  it("a closed loop held by `slow` doubles the demand on `slow` only; `fast` is sized for what arrives", () => {
    // 16 clients, each sending again on its answer: 30/s complete, in flight holds at 16, slow's queue is full.
    const closed = period({
      slowBefore: 1,
      slowNow: 1,
      before: { inFlight: 16, modelCalls: { fast: 500, slow: 485 } },
      now: { inFlight: 15, modelCalls: { fast: 530, slow: 515 } },
      completedRps: 30,
      modelRps: { fast: 30, slow: 30 },
      slowQueued: 14,
    });
    expect(closed.traffic.saturated).toBe(true);
    expect(closed.traffic.heldModels).toEqual(["slow"]);
    expect(closed.slow.demandRps).toBe(60);
    expect(closed.fast.demandRps).toBeCloseTo(29);
    // A counter that went down (the operator loaded again) counts from 0.
    const reloaded = measureOperatorTraffic({
      capacity: capacityWith(1),
      steps: PIPE,
      completedRps: 3,
      intervalSecs: 2,
      before: { inFlight: 0, modelCalls: { fast: 500 } },
      now: { inFlight: 0, modelCalls: { fast: 6, slow: 6 } },
      instancesBefore: new Map(),
      queued: new Map(),
    });
    expect(reloaded.callRps).toEqual(
      new Map([
        ["fast", 3],
        ["slow", 3],
      ]),
    );
  });
});

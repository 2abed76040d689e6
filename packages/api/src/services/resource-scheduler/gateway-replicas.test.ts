import { describe, expect, it } from "vitest";
import { decideReplicas, type ReplicaInputs, type ReplicaPolicy } from "./gateway-replicas.js";

const POLICY: ReplicaPolicy = {
  headroom: 0.25,
  hysteresis: 0.2,
  scaleDownCooldownMs: 120_000,
  maxInstancesPerModel: 4,
  slotsPerGateway: 8,
  coresPerGateway: 4,
  minReplicas: 1,
  maxReplicas: 10,
  p99BudgetMs: 100,
};

const NOW = 1_000_000;

function inputs(over: Partial<ReplicaInputs> = {}): ReplicaInputs {
  return {
    models: [],
    busyCores: null,
    queueTimeMs: null,
    gateways: 2,
    previous: 2,
    lastChangeAt: null,
    ...over,
  };
}

describe("decideReplicas: gateways for the demand summed over every gateway", () => {
  it("sizes for the sum: 3 gateways' 40 req/s each is 120 req/s, 30 instances of 5 req/s, 8 gateways at 4 per gateway", () => {
    const decision = decideReplicas(
      inputs({ models: [{ model: "resnet", demandRps: 120, capacityRps: 5 }], gateways: 3, previous: 3 }),
      POLICY,
      NOW,
    );
    // ceil(120 × 1.25 / 5) = 30 instances; a gateway runs at most 4 of one model: 8 gateways.
    expect(decision).toMatchObject({ replicas: 8, from: 3, needed: { byModel: 8, bySlots: 4, saturated: false } });
    expect(decision.reason).toMatch(/^8 gateways: resnet needs 30 instances for 120 req\/s/);
  });

  it("does not multiply per-gateway instance counts by the gateways: the same sum on 1 or 5 gateways asks for the same count", () => {
    const models = [{ model: "m", demandRps: 40, capacityRps: 10 }];
    const one = decideReplicas(inputs({ models, gateways: 1, previous: 1 }), POLICY, NOW);
    const five = decideReplicas(inputs({ models, gateways: 5, previous: null }), POLICY, NOW);
    // ceil(40 × 1.25 / 10) = 5 instances: 2 gateways either way.
    expect(one.replicas).toBe(2);
    expect(five.replicas).toBe(2);
  });

  it("counts every model's instances against one gateway's slots", () => {
    const models = ["a", "b", "c", "d", "e"].map((model) => ({ model, demandRps: 24, capacityRps: 10 }));
    // 3 instances each, 15 in all, 8 slots per gateway: 2.
    expect(decideReplicas(inputs({ models, previous: 1 }), POLICY, NOW)).toMatchObject({
      replicas: 2,
      needed: { byModel: 1, bySlots: 2 },
    });
  });

  it("counts busy CPU cores against one gateway's cores (with the headroom)", () => {
    // 9 busy cores / (4 × 0.75) = 3.
    const decision = decideReplicas(inputs({ busyCores: 9, previous: 1 }), POLICY, NOW);
    expect(decision).toMatchObject({ replicas: 3, needed: { byCpu: 3 } });
    expect(decision.reason).toMatch(/9\.0 cores busy: 3 at 4 cores per gateway/);
  });

  it("adds a gateway when requests wait longer than the p99 budget, though the rates say the count suffices", () => {
    const models = [{ model: "m", demandRps: 8, capacityRps: 10 }];
    const decision = decideReplicas(inputs({ models, queueTimeMs: 250, previous: 3 }), POLICY, NOW);
    expect(decision).toMatchObject({ replicas: 4, needed: { saturated: true } });
    expect(decision.reason).toMatch(/wait 250 ms on average/);
  });

  it("scales down only after the cooldown, sized for the window's peak, at most halving", () => {
    const models = [{ model: "m", demandRps: 1, peakDemandRps: 1, capacityRps: 10 }];
    const recent = decideReplicas(inputs({ models, previous: 8, lastChangeAt: NOW - 60_000 }), POLICY, NOW);
    expect(recent.replicas).toBe(8);
    expect(recent.reason).toMatch(/holding 8: .*cooldown ago \(60 s left\)/);
    const later = decideReplicas(inputs({ models, previous: 8, lastChangeAt: NOW - 130_000 }), POLICY, NOW);
    expect(later.replicas).toBe(4); // needs 1, but at most halving per step
    const next = decideReplicas(inputs({ models, previous: 4, lastChangeAt: NOW - 130_000 }), POLICY, NOW);
    expect(next.replicas).toBe(2);
  });

  it("keeps the count while the window's peak still needs it (hysteresis)", () => {
    // Now 10 req/s (2 gateways' worth), but 60 req/s within the window: 60 × 1.45 / 5 = 18 instances, 5 gateways.
    const models = [{ model: "m", demandRps: 10, peakDemandRps: 60, capacityRps: 5 }];
    const decision = decideReplicas(inputs({ models, previous: 5, lastChangeAt: null }), POLICY, NOW);
    expect(decision.replicas).toBe(5);
    expect(decision.reason).toMatch(/^holding 5/);
  });

  it("stays within --scheduler-min-gateways and --scheduler-max-gateways, saying which bound applied", () => {
    const big = [{ model: "m", demandRps: 1000, capacityRps: 5 }];
    const capped = decideReplicas(inputs({ models: big }), { ...POLICY, maxReplicas: 6 }, NOW);
    expect(capped.replicas).toBe(6);
    expect(capped.reason).toMatch(/capped at --scheduler-max-gateways 6/);
    const idle = decideReplicas(inputs({ previous: null }), { ...POLICY, minReplicas: 3 }, NOW);
    expect(idle.replicas).toBe(3);
    expect(idle.reason).toMatch(/kept at --scheduler-min-gateways 3/);
  });

  it("starts from the registered gateways when no count was decided yet, and needs one gateway without demand", () => {
    expect(decideReplicas(inputs({ previous: null, gateways: 0 }), POLICY, NOW)).toMatchObject({
      replicas: 1,
      from: null,
    });
  });

  it("refuses bounds that cannot hold, naming the flags", () => {
    expect(() => decideReplicas(inputs(), { ...POLICY, minReplicas: 0 }, NOW)).toThrow(
      /--scheduler-min-gateways must be an integer of at least 1, got 0/,
    );
    expect(() => decideReplicas(inputs(), { ...POLICY, minReplicas: 4, maxReplicas: 3 }, NOW)).toThrow(
      /--scheduler-max-gateways \(3\) must be an integer of at least --scheduler-min-gateways \(4\)/,
    );
  });
});

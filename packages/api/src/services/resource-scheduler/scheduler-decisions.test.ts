import { describe, expect, it } from "vitest";
import {
  decide,
  instancesFor,
  lruVictims,
  type HostBudget,
  type ModelState,
  type SchedulerDecision,
  type SchedulerPolicy,
} from "./scheduler-decisions.js";

const MIB = 1024 * 1024;
const POLICY: SchedulerPolicy = {
  headroom: 0.25,
  hysteresis: 0.2,
  scaleUpCooldownMs: 5_000,
  scaleDownCooldownMs: 60_000,
  idleUnloadMs: 120_000,
  defaultCapacityRps: 10,
  maxInstancesPerModel: 8,
  maxInstancesPerHost: 32,
};
const BUDGET: HostBudget = { cpuSlots: 16, gpuSlots: 0, memoryBytes: 4096 * MIB };
const PERIOD = 5_000;

function model(name: string, overrides: Partial<ModelState> = {}): ModelState {
  return {
    model: name,
    instances: 1,
    parked: false,
    kind: "CPU",
    demandRps: 0,
    reportCapacityRps: null,
    memoryPerInstanceBytes: 256 * MIB,
    lastUsedAt: null,
    pinned: null,
    lastChangeAt: null,
    scalable: true,
    ...overrides,
  };
}

/**
 * Runs the scheduler over a demand curve one period at a time, applying its
 * decisions as the runner does; returns the count after each period and
 * every decision.
 */
function simulate(
  demand: (period: number) => number,
  periods: number,
  start: Partial<ModelState> = {},
  budget = BUDGET,
  policy = POLICY,
) {
  let state = model("m", start);
  const counts: number[] = [];
  const decisions: Array<SchedulerDecision & { at: number }> = [];
  const history: Array<{ at: number; rps: number }> = [];
  for (let p = 0; p < periods; p += 1) {
    const now = p * PERIOD;
    history.push({ at: now, rps: demand(p) });
    const peakDemandRps = Math.max(...history.filter((h) => now - h.at < policy.scaleDownCooldownMs).map((h) => h.rps));
    state = { ...state, demandRps: demand(p), peakDemandRps, lastUsedAt: demand(p) > 0 ? now : state.lastUsedAt };
    for (const decision of decide({ enabled: true, policy, budget, models: [state] }, now)) {
      decisions.push({ ...decision, at: now });
      if (decision.action === "SCALE_UP" || decision.action === "SCALE_DOWN")
        state = { ...state, instances: decision.to, lastChangeAt: now };
    }
    counts.push(state.instances);
  }
  return { counts, decisions };
}

describe("instancesFor", () => {
  it("covers demand plus headroom, at least one instance", () => {
    expect(instancesFor(0, 10, 0.25)).toBe(1);
    expect(instancesFor(8, 10, 0.25)).toBe(1);
    expect(instancesFor(40, 10, 0.25)).toBe(5);
    expect(instancesFor(24, 10, 0.25)).toBe(3);
  });
});

describe("decide", () => {
  it("a step in demand scales up within one period and back down after the cooldown, in steps", () => {
    const { counts, decisions } = simulate((p) => (p >= 2 && p < 10 ? 60 : 0), 60);
    expect(counts[1]).toBe(1);
    expect(counts[2]).toBe(8); // 60 × 1.25 / 10 = 7.5 -> 8 (the per-model cap)
    expect(decisions[0]).toMatchObject({ action: "SCALE_UP", from: 1, to: 8, capacitySource: "default" });
    expect(decisions[0]!.reason).toContain("demand 60.0 req/s");
    // Demand ends at period 10; the count follows the peak of the last 60 s, so it starts down a cooldown later.
    const firstDown = decisions.find((d) => d.action === "SCALE_DOWN")!;
    expect(firstDown.at).toBe(9 * PERIOD + POLICY.scaleDownCooldownMs); // a full window after the last busy period (9)
    expect(firstDown).toMatchObject({ from: 8, to: 4 }); // at most halving
    expect(counts.at(-1)).toBe(1);
    // Each step down waits a cooldown after the one before.
    const downs = decisions.filter((d) => d.action === "SCALE_DOWN");
    for (let i = 1; i < downs.length; i += 1)
      expect(downs[i]!.at - downs[i - 1]!.at).toBeGreaterThanOrEqual(POLICY.scaleDownCooldownMs);
  });

  it("a ramp scales up step by step as demand grows, never down on the way", () => {
    const { counts, decisions } = simulate((p) => p * 4, 15);
    for (let i = 1; i < counts.length; i += 1) expect(counts[i]!).toBeGreaterThanOrEqual(counts[i - 1]!);
    expect(decisions.every((d) => d.action === "SCALE_UP")).toBe(true);
    expect(counts.at(-1)).toBe(7); // 56 req/s × 1.25 / 10 = 7
    // Scale-ups respect the up cooldown: one change per period at most with a 5 s cooldown and 5 s periods.
    const ats = decisions.map((d) => d.at);
    expect(new Set(ats).size).toBe(ats.length);
  });

  it("short bursts do not flap: at most one scale-down per cooldown", () => {
    // A one-period burst every 4 periods (20 s), shorter than the 60 s down cooldown.
    const { counts, decisions } = simulate((p) => (p % 4 === 0 ? 50 : 2), 48);
    // ... and once the bursts stop, it steps down after the window.
    const after = simulate((p) => (p % 4 === 0 && p < 24 ? 50 : 2), 60);
    expect(after.decisions.filter((d) => d.action === "SCALE_DOWN")[0]!.at).toBeGreaterThanOrEqual(
      20 * PERIOD + POLICY.scaleDownCooldownMs,
    );
    expect(after.counts.at(-1)).toBe(1);
    const downs = decisions.filter((d) => d.action === "SCALE_DOWN");
    const ups = decisions.filter((d) => d.action === "SCALE_UP");
    expect(ups.length).toBe(1); // up once for the first burst, then the count holds
    expect(downs.length).toBe(0);
    expect(Math.min(...counts)).toBe(7);
  });

  it("hysteresis: demand just under the current capacity does not scale down", () => {
    // 3 instances × 10 req/s; 22 req/s needs 3 with headroom (2.75) and 3 with headroom + hysteresis (3.1 -> 4 capped by halving rule -> stays).
    const decisions = decide(
      {
        enabled: true,
        policy: POLICY,
        budget: BUDGET,
        models: [model("m", { instances: 3, demandRps: 22, lastChangeAt: -1e9 })],
      },
      0,
    );
    expect(decisions).toEqual([]);
    // 12 req/s fits 2 with 45 % to spare: down to 2.
    const down = decide(
      {
        enabled: true,
        policy: POLICY,
        budget: BUDGET,
        models: [model("m", { instances: 3, demandRps: 12, lastChangeAt: -1e9 })],
      },
      0,
    );
    expect(down).toMatchObject([{ action: "SCALE_DOWN", from: 3, to: 2 }]);
  });

  it("never goes below the config's instance count on its own (a pin may)", () => {
    const idle = model("m", { instances: 4, minInstances: 2, demandRps: 0, lastChangeAt: -1e9 });
    expect(decide({ enabled: true, policy: POLICY, budget: BUDGET, models: [idle] }, 0)).toMatchObject([
      { action: "SCALE_DOWN", from: 4, to: 2 },
    ]);
    expect(decide({ enabled: true, policy: POLICY, budget: BUDGET, models: [{ ...idle, instances: 2 }] }, 0)).toEqual(
      [],
    );
    expect(
      decide({ enabled: true, policy: POLICY, budget: BUDGET, models: [{ ...idle, instances: 2, pinned: 1 }] }, 0),
    ).toMatchObject([{ action: "SCALE_DOWN", to: 1 }]);
  });

  it("a saturated model (requests waiting, serving near capacity) at least doubles: its measured demand is capped by what it serves", () => {
    const saturated = model("m", { instances: 2, demandRps: 18, queued: 40, lastChangeAt: -1e9 });
    const [decision] = decide({ enabled: true, policy: POLICY, budget: BUDGET, models: [saturated] }, 0);
    expect(decision).toMatchObject({ action: "SCALE_UP", from: 2, to: 4 });
    expect(decision!.reason).toContain("saturated (40 requests waiting)");
    // A short queue at low load (a batcher gathering a batch) is not saturation.
    expect(
      decide({ enabled: true, policy: POLICY, budget: BUDGET, models: [{ ...saturated, demandRps: 4 }] }, 0),
    ).toEqual([]);
    // Nor does a model with a queue scale down.
    expect(
      decide(
        {
          enabled: true,
          policy: POLICY,
          budget: BUDGET,
          models: [{ ...saturated, instances: 6, demandRps: 4, queued: 6 }],
        },
        0,
      ),
    ).toEqual([]);
  });

  it("uses the perf report's capacity when there is one", () => {
    const [decision] = decide(
      {
        enabled: true,
        policy: POLICY,
        budget: BUDGET,
        models: [model("m", { demandRps: 100, reportCapacityRps: 40 })],
      },
      0,
    );
    expect(decision).toMatchObject({ action: "SCALE_UP", to: 4, capacityRps: 40, capacitySource: "report" });
  });

  it("a model that does not fit gets what fits and a HOLD naming the budget", () => {
    const budget: HostBudget = { cpuSlots: 4, gpuSlots: 0, memoryBytes: 4096 * MIB };
    const decisions = decide(
      {
        enabled: true,
        policy: POLICY,
        budget,
        models: [model("big", { demandRps: 100 }), model("other", { instances: 1, demandRps: 1, lastUsedAt: 0 })],
      },
      0,
    );
    expect(decisions).toMatchObject([
      { model: "big", action: "SCALE_UP", from: 1, to: 3 },
      { model: "big", action: "HOLD", from: 1, to: 3 },
    ]);
    expect(decisions[1]!.reason).toContain("CPU instance slots all used: 4 CPU instances loaded, the budget is 4)");
  });

  it("says so when the configs' own instances already fill the CPU budget (issue 27 item 7)", () => {
    const budget: HostBudget = { cpuSlots: 4, gpuSlots: 0, memoryBytes: 4096 * MIB };
    const decisions = decide(
      {
        enabled: true,
        policy: POLICY,
        budget,
        models: [
          model("busy", { instances: 2, minInstances: 2, demandRps: 100 }),
          model("idle", { instances: 12, minInstances: 12, demandRps: 0, lastUsedAt: 0 }),
        ],
      },
      0,
    );
    expect(decisions).toMatchObject([{ model: "busy", action: "HOLD", from: 2, to: 2 }]);
    expect(decisions[0]!.reason).toContain(
      "CPU instance slots all used: 14 CPU instances loaded, the budget is 4: more are loaded than the budget holds, so no CPU model scales up",
    );
  });

  it("a model whose one instance is over the memory budget is held with the memory named", () => {
    const budget: HostBudget = { cpuSlots: 16, gpuSlots: 0, memoryBytes: 1024 * MIB };
    const decisions = decide(
      {
        enabled: true,
        policy: POLICY,
        budget,
        models: [model("huge", { demandRps: 30, memoryPerInstanceBytes: 900 * MIB })],
      },
      0,
    );
    expect(decisions).toMatchObject([{ model: "huge", action: "HOLD", from: 1, to: 1 }]);
    expect(decisions[0]!.reason).toMatch(/memory: 124 MiB left of 1024 MiB, 900 MiB per instance/);
  });

  it("memory short: unloads the least recently used idle model, then scales up", () => {
    const budget: HostBudget = { cpuSlots: 16, gpuSlots: 0, memoryBytes: 1024 * MIB };
    const now = 1_000_000;
    const models = [
      model("busy", { demandRps: 30 }), // wants 4 × 256 MiB; 3 × 256 MiB in use
      model("old", { lastUsedAt: now - 600_000 }),
      model("recent", { lastUsedAt: now - 300_000 }),
    ];
    const decisions = decide({ enabled: true, policy: POLICY, budget, models }, now);
    expect(decisions).toMatchObject([
      { model: "old", action: "UNLOAD", from: 1, to: 0 },
      { model: "recent", action: "UNLOAD", from: 1, to: 0 },
      { model: "busy", action: "SCALE_UP", from: 1, to: 4 },
    ]);
    expect(decisions[0]!.reason).toContain("least recently used idle model");
  });

  it("never unloads pinned, busy or recently used models", () => {
    const budget: HostBudget = { cpuSlots: 16, gpuSlots: 0, memoryBytes: 768 * MIB };
    const now = 1_000_000;
    const models = [
      model("busy", { demandRps: 30 }),
      model("pinned", { pinned: 1, lastUsedAt: now - 600_000 }),
      model("fresh", { lastUsedAt: now - 10_000 }),
    ];
    const decisions = decide({ enabled: true, policy: POLICY, budget, models }, now);
    expect(decisions.map((d) => d.action)).toEqual(["HOLD"]);
  });

  it("pinned models go to their pin at once and ignore demand", () => {
    const decisions = decide(
      {
        enabled: true,
        policy: POLICY,
        budget: BUDGET,
        models: [
          model("p", { instances: 1, pinned: 3, demandRps: 0, lastChangeAt: 0 }),
          model("q", { instances: 4, pinned: 2, demandRps: 500, lastChangeAt: 0 }),
        ],
      },
      1,
    );
    expect(decisions).toMatchObject([
      { model: "q", action: "SCALE_DOWN", from: 4, to: 2, reason: "pinned to 2 by an admin" },
      { model: "p", action: "SCALE_UP", from: 1, to: 3, reason: "pinned to 3 by an admin" },
    ]);
  });

  it("scheduler off: no decisions whatever the demand", () => {
    expect(
      decide({ enabled: false, policy: POLICY, budget: BUDGET, models: [model("m", { demandRps: 1000 })] }, 0),
    ).toEqual([]);
  });

  it("leaves parked and unscalable models alone", () => {
    const models = [
      model("parked", { instances: 0, parked: true, demandRps: 50 }),
      model("ensemble", { scalable: false, demandRps: 50 }),
    ];
    expect(decide({ enabled: true, policy: POLICY, budget: BUDGET, models }, 0)).toEqual([]);
  });

  it("caps at --max-instances across models", () => {
    const policy = { ...POLICY, maxInstancesPerHost: 5 };
    const decisions = decide(
      {
        enabled: true,
        policy,
        budget: BUDGET,
        models: [model("a", { demandRps: 100 }), model("b", { demandRps: 10 })],
      },
      0,
    );
    expect(decisions.filter((d) => d.action === "SCALE_UP").reduce((sum, d) => sum + d.to - d.from, 0)).toBe(3);
    expect(decisions.find((d) => d.action === "HOLD")!.reason).toContain("--max-instances 5 reached");
  });
});

describe("lruVictims", () => {
  const now = 1_000_000;
  const models = [
    model("c", { lastUsedAt: now - 200_000 }),
    model("a", { lastUsedAt: now - 900_000 }),
    model("b", { lastUsedAt: now - 500_000, instances: 2 }),
    model("never", { lastUsedAt: null }),
  ];

  it("picks the least recently used first (never used before all), only as many as needed", () => {
    expect(lruVictims(models, 256 * MIB, now, 120_000, new Set()).map((m) => m.model)).toEqual(["never"]);
    expect(lruVictims(models, 700 * MIB, now, 120_000, new Set()).map((m) => m.model)).toEqual(["never", "a", "b"]);
  });

  it("returns none when all idle models together would not free enough", () => {
    expect(lruVictims(models, 100_000 * MIB, now, 120_000, new Set())).toEqual([]);
  });

  it("skips excluded and recently used models", () => {
    expect(lruVictims(models, 256 * MIB, now, 600_000, new Set(["never"])).map((m) => m.model)).toEqual(["a"]);
  });
});

describe("GPU models (instance_group KIND_GPU: count per listed GPU)", () => {
  const gpuHost: HostBudget = { cpuSlots: 16, gpuSlots: 3, gpuDevices: [0, 1], memoryBytes: 64 * 1024 * MIB };
  const onBoth = (overrides: Partial<ModelState> = {}): ModelState =>
    model("g", { kind: "GPU", gpuDevices: [0, 1], instances: 2, minInstances: 2, ...overrides });

  it("scales a model on GPUs [0, 1] in steps of one instance per GPU", () => {
    // 35 req/s + 25 % needs 5 × 10 req/s: rounded up to 6, three per GPU.
    const [up] = decide({ enabled: true, policy: POLICY, budget: gpuHost, models: [onBoth({ demandRps: 35 })] }, 0);
    expect(up).toMatchObject({ action: "SCALE_UP", from: 2, to: 6 });
    expect(up!.reason).toContain("6 on its 2 GPUs (count is per GPU)");
    const [down] = decide(
      {
        enabled: true,
        policy: POLICY,
        budget: gpuHost,
        models: [onBoth({ instances: 6, demandRps: 0, lastChangeAt: -POLICY.scaleDownCooldownMs })],
      },
      0,
    );
    // At most halving, rounded up to whole steps: 3 -> 4.
    expect(down).toMatchObject({ action: "SCALE_DOWN", from: 6, to: 4 });
  });

  it("counts slots per GPU: a model on GPU 1 only takes GPU 1's, and a full GPU holds the step back", () => {
    const single = model("one", { kind: "GPU", gpuDevices: [1], instances: 2, demandRps: 100, minInstances: 1 });
    const decisions = decide(
      { enabled: true, policy: POLICY, budget: gpuHost, models: [single, onBoth({ demandRps: 100 })] },
      0,
    );
    // GPU 1 has 3 slots: "g" holds one there, "one" holds 2: no room for either to grow on GPU 1.
    expect(decisions.filter((d) => d.action === "SCALE_UP")).toEqual([]);
    const holds = decisions.filter((d) => d.action === "HOLD");
    expect(holds.map((d) => d.model).sort()).toEqual(["g", "one"]);
    expect(holds.find((d) => d.model === "g")!.reason).toContain("GPU instance slots all used on GPU 1 (3 per GPU");
    // On its own, "g" grows to 3 per GPU (6), the slots' limit, and says the rest does not fit.
    const alone = decide({ enabled: true, policy: POLICY, budget: gpuHost, models: [onBoth({ demandRps: 100 })] }, 0);
    expect(alone.find((d) => d.action === "SCALE_UP")).toMatchObject({ from: 2, to: 6 });
    expect(alone.find((d) => d.action === "HOLD")!.reason).toMatch(
      /wanted 8 instances; does not fit: 2 more instances/,
    );
  });

  it("never scales a KIND_GPU model on a host without GPUs, or onto a GPU the host lacks", () => {
    const noGpus: HostBudget = { cpuSlots: 16, gpuSlots: 3, gpuDevices: [], memoryBytes: 4096 * MIB };
    const [held] = decide({ enabled: true, policy: POLICY, budget: noGpus, models: [onBoth({ demandRps: 35 })] }, 0);
    expect(held).toMatchObject({ action: "HOLD", from: 2, to: 2 });
    expect(held!.reason).toContain("a KIND_GPU model on a host without GPUs is never scaled");
    const [lacking] = decide(
      {
        enabled: true,
        policy: POLICY,
        budget: { ...gpuHost, gpuDevices: [0] },
        models: [onBoth({ demandRps: 35 })],
      },
      0,
    );
    expect(lacking).toMatchObject({ action: "HOLD", to: 2 });
    expect(lacking!.reason).toContain("its GPU 1 not on this host");
  });

  it("rounds a pin and the per-model limit to whole steps", () => {
    const [pinned] = decide({ enabled: true, policy: POLICY, budget: gpuHost, models: [onBoth({ pinned: 3 })] }, 0);
    expect(pinned).toMatchObject({ action: "SCALE_UP", to: 4 });
    expect(pinned!.reason).toContain("rounded up to 4: 2 GPUs, one instance on each per step");
    const three = model("t", { kind: "GPU", gpuDevices: [0, 1, 2], instances: 3, demandRps: 1000 });
    const [capped] = decide(
      {
        enabled: true,
        policy: POLICY,
        budget: { ...gpuHost, gpuDevices: [0, 1, 2], gpuSlots: 8 },
        models: [three],
      },
      0,
    );
    // maxInstancesPerModel 8 on 3 GPUs: 6 (two per GPU), never 8.
    expect(capped).toMatchObject({ action: "SCALE_UP", from: 3, to: 6 });
  });
});

describe("operators' step models (issue 25)", () => {
  const NOW = 1_000_000;
  const step = (name: string, rps: number, demandRps: number, overrides: Partial<ModelState> = {}): ModelState =>
    model(name, {
      reportCapacityRps: rps,
      demandRps,
      operatorDemand: { operator: "pipe", directRps: 0, note: `operator 'pipe' (step '${name}')` },
      ...overrides,
    });

  it("grows the bottleneck step for the operator's demand, records the operator, and leaves the fast step", () => {
    const decisions = decide(
      {
        enabled: true,
        policy: POLICY,
        budget: BUDGET,
        // 50 op req/s: slow (30/instance) needs ceil(62.5 / 30) = 3; fast (90) carries it with one. Fast has a
        // short queue (a burst behind the operator): operator demand, not per-model saturation, decides.
        models: [step("fast", 90, 50, { queued: 3 }), step("slow", 30, 50, { queued: 12 })],
      },
      NOW,
    );
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toMatchObject({ model: "slow", action: "SCALE_UP", from: 1, to: 3, operator: "pipe" });
    expect(decisions[0]!.reason).toMatch(/^operator 'pipe' \(step 'slow'\); demand 50.0 req\/s/);
  });

  it("gives the bottleneck step the budget first when it is short", () => {
    const decisions = decide(
      {
        enabled: true,
        policy: POLICY,
        budget: { ...BUDGET, cpuSlots: 4 },
        // 100 op req/s: slow needs 5, mid (60/instance) needs 3; 2 slots are free.
        models: [step("mid", 60, 100, { instances: 1 }), step("slow", 30, 100, { instances: 1 })],
      },
      NOW,
    );
    const up = decisions.filter((decision) => decision.action === "SCALE_UP");
    expect(up.map((decision) => [decision.model, decision.to])).toEqual([["slow", 3]]);
  });

  it("a model's own demand keeps the operator unset", () => {
    const [decision] = decide(
      { enabled: true, policy: POLICY, budget: BUDGET, models: [model("solo", { demandRps: 40 })] },
      NOW,
    );
    expect(decision).toMatchObject({ model: "solo", action: "SCALE_UP", operator: null });
  });
});

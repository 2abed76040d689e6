import { describe, expect, it } from "vitest";
import { decide, type HostBudget, type ModelState, type SchedulerPolicy } from "./scheduler-decisions.js";

// Rule 9 of scheduler-decisions.ts (issue 24): a batch job gets instances from idle room only, and gives them
// back first when online demand needs the room.
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
const NOW = 1_000_000;

function model(name: string, overrides: Partial<ModelState> = {}): ModelState {
  return {
    model: name,
    instances: 1,
    parked: false,
    kind: "CPU",
    demandRps: 0,
    reportCapacityRps: 10,
    memoryPerInstanceBytes: 256 * MIB,
    lastUsedAt: null,
    pinned: null,
    lastChangeAt: null,
    scalable: true,
    ...overrides,
  };
}

const run = (models: ModelState[], budget: HostBudget) =>
  decide({ enabled: true, policy: POLICY, budget, models }, NOW);

describe("resource scheduler: instances for batch jobs (rule 9)", () => {
  it("sizes on online demand and adds one instance a period for a busy job while cores and memory are idle", () => {
    // 2 req/s online, 16 of the job's: on demand alone it would ask for 3 (18 × 1.25 / 10); the job gets one from idle room.
    const decisions = run([model("m", { instances: 2, demandRps: 18, batch: { demandRps: 16, addedInstances: 0 } })], {
      cpuSlots: 8,
      gpuSlots: 0,
      memoryBytes: 4096 * MIB,
    });
    expect(decisions).toEqual([
      expect.objectContaining({ model: "m", action: "SCALE_UP", from: 2, to: 3, batch: "grow" }),
    ]);
    expect(decisions[0]!.reason).toMatch(/batch job sends 16\.0 req\/s.*idle: one more for the job/);
  });

  it("adds none without idle room, nor for a job that leaves its instances half idle", () => {
    const busy = model("m", { instances: 2, demandRps: 18, batch: { demandRps: 16, addedInstances: 0 } });
    expect(run([busy], { cpuSlots: 2, gpuSlots: 0, memoryBytes: 4096 * MIB })).toEqual([]);
    expect(run([busy], { cpuSlots: 8, gpuSlots: 0, memoryBytes: 512 * MIB })).toEqual([]);
    // 12 req/s on 4 instances of 10: no growth; online needs 1, so one instance goes, and the 2 added for the job stay.
    const idle = model("m", { instances: 4, demandRps: 12, batch: { demandRps: 10, addedInstances: 2 } });
    expect(run([idle], { cpuSlots: 8, gpuSlots: 0, memoryBytes: 4096 * MIB })).toEqual([
      expect.objectContaining({ action: "SCALE_DOWN", from: 4, to: 3 }),
    ]);
  });

  it("gives the job's instances back first when online demand of another model needs the room", () => {
    // 4 CPU slots: the job's model runs 3 (2 added for the job), the online model 1 and needs 3 (20 req/s × 1.25 / 10).
    const decisions = run(
      [
        model("batchy", { instances: 3, demandRps: 30, batch: { demandRps: 30, addedInstances: 2 } }),
        model("online", { instances: 1, demandRps: 20 }),
      ],
      { cpuSlots: 4, gpuSlots: 0, memoryBytes: 4096 * MIB },
    );
    expect(decisions.map((d) => [d.model, d.action, d.from, d.to, d.batch ?? null])).toEqual([
      ["batchy", "SCALE_DOWN", 3, 1, "give-back"],
      ["online", "SCALE_UP", 1, 3, null],
    ]);
    expect(decisions[0]!.reason).toMatch(/gives back 2 instances added for its batch job: online demand of online/);
  });

  it("keeps the job's instances through online scale-downs while it runs, and lets them go after", () => {
    const running = model("m", {
      instances: 4,
      demandRps: 8,
      peakDemandRps: 8,
      minInstances: 1,
      lastChangeAt: NOW - 120_000,
      batch: { demandRps: 8, addedInstances: 3 },
    });
    // No online demand: online sizing wants 1, but the 3 added for the job stay (and the job is not busy enough to grow).
    expect(run([running], { cpuSlots: 4, gpuSlots: 0, memoryBytes: 4096 * MIB })).toEqual([]);
    // The job ended: the count follows demand down again (at most halving per step).
    const { batch: _ended, ...after } = running;
    expect(
      run([{ ...after, demandRps: 0, peakDemandRps: 0 }], { cpuSlots: 4, gpuSlots: 0, memoryBytes: 4096 * MIB }),
    ).toEqual([expect.objectContaining({ action: "SCALE_DOWN", from: 4, to: 2 })]);
  });
});

import { describe, expect, it } from "vitest";
import {
  chooseHardware,
  costPer1000Inferences,
  instanceHourPrice,
  parseHardwareKinds,
  type HardwareFitInput,
  type KindMeasure,
  type KindProfile,
} from "./hardware-fit.js";
import { decide, type HostBudget, type ModelState, type SchedulerPolicy } from "./scheduler-decisions.js";

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;
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
/** 4 CPU slots, 2 slots on each of 2 GPUs. */
const GPU_HOST: HostBudget = { cpuSlots: 4, gpuSlots: 2, gpuDevices: [0, 1], memoryBytes: 16 * GIB };
const CPU_HOST: HostBudget = { cpuSlots: 4, gpuSlots: 2, gpuDevices: [], memoryBytes: 16 * GIB };

// A CPU instance-hour: 0.40 / 4 slots = 0.10; a GPU instance-hour: 4.00 × 0.8 / (2 GPUs × 2 slots) = 0.80.
const CPU_PROFILE: KindProfile = { name: "c-host", costPerHour: 0.4, currency: "USD", gpuPriceShare: 0, gpuCount: 0 };
const GPU_PROFILE: KindProfile = { name: "g-host", costPerHour: 4, currency: "USD", gpuPriceShare: 0.8, gpuCount: 2 };

function measures(cpuRps: number | null, gpuRps: number | null, overrides: Partial<KindMeasure>[] = []): KindMeasure[] {
  return [
    { kind: "CPU", profileExists: true, profile: CPU_PROFILE, capacityRps: cpuRps, ...overrides[0] },
    { kind: "GPU", profileExists: true, profile: GPU_PROFILE, capacityRps: gpuRps, ...overrides[1] },
  ];
}

function fit(cpuRps: number | null, gpuRps: number | null, extra: Partial<HardwareFitInput> = {}): HardwareFitInput {
  return { allowed: ["CPU", "GPU"], measures: measures(cpuRps, gpuRps), ...extra };
}

function model(overrides: Partial<ModelState> = {}): ModelState {
  return {
    model: "m",
    instances: 1,
    parked: false,
    kind: "CPU",
    demandRps: 5,
    reportCapacityRps: 10,
    memoryPerInstanceBytes: 256 * MIB,
    lastUsedAt: null,
    pinned: null,
    lastChangeAt: null,
    scalable: true,
    ...overrides,
  };
}

const choose = (m: ModelState, input: HardwareFitInput, budget = GPU_HOST, used = new Map<number, number>()) =>
  chooseHardware(m, input, budget, used, POLICY);

describe("parseHardwareKinds", () => {
  it("takes CPU and GPU in any case, with or without KIND_, in a fixed order", () => {
    expect(parseHardwareKinds("GPU, cpu")).toEqual({ kinds: ["CPU", "GPU"] });
    expect(parseHardwareKinds("KIND_GPU")).toEqual({ kinds: ["GPU"] });
  });

  it("names what is wrong: an unknown kind, or nothing listed", () => {
    expect(parseHardwareKinds("CPU,TPU")).toEqual({
      problem: "parameter operon_hardware_kinds names 'TPU': the kinds are CPU and GPU",
    });
    expect(parseHardwareKinds(" , ")).toEqual({ problem: expect.stringContaining("is empty") });
  });
});

describe("cost per 1,000 inferences", () => {
  it("prices an instance-hour by the profile's CPU part over CPU slots, or its GPU part over GPUs × GPU slots", () => {
    expect(instanceHourPrice(CPU_PROFILE, "CPU", GPU_HOST)).toBeCloseTo(0.1, 12);
    expect(instanceHourPrice(GPU_PROFILE, "GPU", GPU_HOST)).toBeCloseTo(0.8, 12);
    // The CPU part of a GPU host's price, for a CPU instance measured there.
    expect(instanceHourPrice(GPU_PROFILE, "CPU", GPU_HOST)).toBeCloseTo(0.2, 12);
  });

  it("is the instance-hour price over (throughput × 3.6)", () => {
    // 0.10 an hour at 10 req/s = 36,000 inferences an hour: 0.10 / 36 per 1,000.
    expect(costPer1000Inferences(0.1, 10)).toBeCloseTo(0.1 / 36, 12);
  });
});

describe("chooseHardware", () => {
  it("follows the cost: the GPU when its throughput makes it cheaper, the CPU when not", () => {
    // GPU 0.80 / (400 × 3.6) = 0.000556 vs CPU 0.10 / (10 × 3.6) = 0.00278.
    const gpu = choose(model(), fit(10, 400));
    expect(gpu.chosen).toBe("GPU");
    expect(gpu.reason).toMatch(
      /^GPU is the cheapest: 0\.000556 USD per 1,000 inferences at the p99 budget \(vs CPU 0\.00278\)$/,
    );
    expect(gpu.candidates.map((c) => [c.kind, c.eligible, c.costPer1000 !== null])).toEqual([
      ["CPU", true, true],
      ["GPU", true, true],
    ]);
    // GPU at 40 req/s: 0.80 / 144 = 0.00556, twice the CPU's.
    expect(choose(model({ kind: "GPU", gpuDevices: [0, 1], instances: 2 }), fit(10, 40)).chosen).toBe("CPU");
  });

  it("never offers the GPU on a host without one, however cheap", () => {
    const choice = choose(model(), fit(10, 4000), CPU_HOST);
    expect(choice.chosen).toBe("CPU");
    expect(choice.candidates.find((c) => c.kind === "GPU")).toMatchObject({
      eligible: false,
      why: "this host has no GPU",
    });
    // Still priced, for the console: 0.80 / (4000 × 3.6).
    expect(choice.candidates[1]!.costPer1000).toBeCloseTo(0.8 / 14_400, 12);
  });

  it("needs a free slot on every GPU for the instances the demand asks (one per GPU per round)", () => {
    // 5 req/s + 25 % on 400 req/s: 1 instance, so one round: a slot on each GPU. GPU 1 is full (2 of 2).
    const full = choose(
      model(),
      fit(10, 400),
      GPU_HOST,
      new Map([
        [0, 1],
        [1, 2],
      ]),
    );
    expect(full.chosen).toBe("CPU");
    expect(full.candidates[1]!.why).toBe("needs 1 GPU slot on each GPU; GPU 1 has fewer free (2 per GPU)");
    expect(
      choose(
        model(),
        fit(10, 400),
        GPU_HOST,
        new Map([
          [0, 1],
          [1, 1],
        ]),
      ).chosen,
    ).toBe("GPU");
  });

  it("needs GPU memory for its instances where NVML reads it", () => {
    const input = fit(10, 400, {
      gpuFreeMemoryBytes: new Map([
        [0, 8 * GIB],
        [1, 100 * MIB],
      ]),
    });
    const choice = choose(model(), input);
    expect(choice.chosen).toBe("CPU");
    expect(choice.candidates[1]!.why).toBe("needs 256 MiB of GPU memory on each GPU; GPU 1 has 100 MiB free");
  });

  it("offers no kind it has no measurement for, and calls an allowed kind without any profile a config problem", () => {
    const unmeasured = choose(model(), {
      allowed: ["CPU", "GPU"],
      measures: measures(10, null, [{}, { profile: null }]),
    });
    expect(unmeasured).toMatchObject({ chosen: "CPU", configProblem: false });
    expect(unmeasured.candidates[1]!.why).toBe("no successful perf report measured on a GPU hardware profile");
    const overBudget = choose(model(), fit(10, null));
    expect(overBudget.candidates[1]!.why).toBe("its latest GPU perf report has no step within the p99 budget");
    const noProfile = choose(model(), {
      allowed: ["CPU", "GPU"],
      measures: measures(10, null, [{}, { profileExists: false, profile: null }]),
    });
    expect(noProfile).toMatchObject({ chosen: "CPU", configProblem: true });
    expect(noProfile.candidates[1]!.why).toBe(
      "the model allows GPU, but no GPU hardware profile exists: add one (Costs)",
    );
  });

  it("keeps the kind it runs on when the costs tie, and compares no prices in different currencies", () => {
    // CPU 0.10 / (10 × 3.6) = GPU 0.80 / (80 × 3.6).
    expect(choose(model({ kind: "GPU", gpuDevices: [0, 1], instances: 2 }), fit(10, 80)).chosen).toBe("GPU");
    expect(choose(model(), fit(10, 80)).chosen).toBe("CPU");
    const euro = choose(model(), {
      allowed: ["CPU", "GPU"],
      measures: measures(10, 400, [{}, { profile: { ...GPU_PROFILE, currency: "EUR" } }]),
    });
    expect(euro.chosen).toBeNull();
    expect(euro.reason).toBe("not compared: the candidates are priced in different currencies (USD, EUR)");
  });

  it("lists only the allowed kinds", () => {
    const choice = choose(model(), { allowed: ["CPU"], measures: measures(10, 400) });
    expect(choice.candidates.map((c) => c.kind)).toEqual(["CPU"]);
    expect(choice.chosen).toBe("CPU");
  });
});

describe("decide: hardware fit", () => {
  const inputs = (m: ModelState, budget = GPU_HOST) => ({ enabled: true, policy: POLICY, budget, models: [m] });

  it("moves a CPU model to the GPU when that is cheaper, sized for the demand in rounds over the host's GPUs", () => {
    const decisions = decide(inputs(model({ demandRps: 500, hardware: fit(10, 400) })), 60_000);
    // 500 req/s + 25 % on 400 req/s: 2 instances, one round on each of the 2 GPUs; no SCALE_UP on the CPU as well.
    expect(decisions).toEqual([
      expect.objectContaining({ action: "MOVE", kind: "GPU", from: 1, to: 2, capacityRps: 400 }),
    ]);
    expect(decisions[0]!.reason).toMatch(
      /^moves from CPU to GPU: GPU is the cheapest: .*; 2 instances for demand 500 req\/s \+ 25 % headroom$/,
    );
  });

  it("moves a GPU model back to the CPU when the CPU is cheaper", () => {
    const m = model({ kind: "GPU", gpuDevices: [0, 1], instances: 2, demandRps: 5, hardware: fit(10, 40) });
    expect(decide(inputs(m), 60_000)).toEqual([expect.objectContaining({ action: "MOVE", kind: "CPU", to: 1 })]);
  });

  it("never moves to the GPU on a host without one", () => {
    const decisions = decide(inputs(model({ demandRps: 5, hardware: fit(10, 4000) }), CPU_HOST), 60_000);
    expect(decisions.filter((d) => d.action === "MOVE")).toEqual([]);
  });

  it("waits a scale-up cooldown after the last change, and leaves a pinned model where it is", () => {
    expect(decide(inputs(model({ lastChangeAt: 58_000, hardware: fit(10, 400) })), 60_000)).toEqual([]);
    expect(decide(inputs(model({ pinned: 1, hardware: fit(10, 400) })), 60_000)).toEqual([]);
  });

  it("holds, saying why, when the config allows a kind without any hardware profile or names a bad kind", () => {
    const noProfile = model({
      hardware: {
        allowed: ["CPU", "GPU"],
        measures: measures(10, null, [{}, { profileExists: false, profile: null }]),
      },
    });
    const [hold] = decide(inputs(noProfile), 60_000);
    expect(hold).toMatchObject({ action: "HOLD", from: 1, to: 1 });
    expect(hold!.reason).toBe(
      "hardware fit: GPU: the model allows GPU, but no GPU hardware profile exists: add one (Costs)",
    );
    // On a host without a GPU as well: the problem is still the missing profile, not the host.
    const [onCpuHost] = decide(inputs(noProfile, CPU_HOST), 60_000);
    expect(onCpuHost!.reason).toBe(hold!.reason);
    const bad = model({
      hardware: { allowed: [], problem: "parameter operon_hardware_kinds names 'TPU'", measures: [] },
    });
    expect(decide(inputs(bad), 60_000)).toEqual([
      expect.objectContaining({ action: "HOLD", reason: "hardware fit: parameter operon_hardware_kinds names 'TPU'" }),
    ]);
  });

  it("counts the move in the GPU budget: a second model that would also move finds the slots taken", () => {
    const budget: HostBudget = { ...GPU_HOST, gpuSlots: 1 };
    const a = model({ model: "a", hardware: fit(10, 400) });
    const b = model({ model: "b", hardware: fit(10, 400) });
    const decisions = decide({ enabled: true, policy: POLICY, budget, models: [a, b] }, 60_000);
    expect(decisions.map((d) => [d.model, d.action])).toEqual([["a", "MOVE"]]);
  });
});

import { describe, expect, it } from "vitest";
import { gpusPerRound } from "./model-scaling.js";

// How many instances one step of a group's count adds when the scheduler rescales it (Triton: count per GPU).
// The rescale itself on a GPU pool: instances/model-instances-placement.test.ts (a GPU model cannot load on this host).
describe("gpusPerRound", () => {
  it("is the listed GPUs for KIND_GPU, every GPU of the host without a list, and 1 elsewhere", () => {
    expect(gpusPerRound({ kind: "KIND_GPU", gpus: [0, 1, 3] }, 8)).toBe(3);
    expect(gpusPerRound({ kind: "KIND_GPU" }, 4)).toBe(4);
    expect(gpusPerRound({ kind: "KIND_GPU", gpus: [] }, 2)).toBe(2);
    // No GPU at all: such a model cannot have loaded, but the step is never 0.
    expect(gpusPerRound({ kind: "KIND_GPU" }, 0)).toBe(1);
    expect(gpusPerRound({ kind: "KIND_CPU" }, 4)).toBe(1);
    expect(gpusPerRound(undefined, 4)).toBe(1);
  });
});

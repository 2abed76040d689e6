import { describe, expect, it } from "vitest";
import { instancePlacements, placementOf } from "./instance-placement.js";

const where = (config: Record<string, unknown>, gpuCount = 0): Array<[string, string, number | null]> =>
  instancePlacements("m", config, gpuCount).map((p) => [p.name, p.kind, p.device]);

describe("instancePlacements (Triton's instance_group placement)", () => {
  it("puts count instances on each GPU of a KIND_GPU group", () => {
    expect(where({ instance_group: [{ name: "g", kind: "KIND_GPU", count: 2, gpus: [0, 1] }] })).toEqual([
      ["g_0", "KIND_GPU", 0],
      ["g_1", "KIND_GPU", 1],
      ["g_2", "KIND_GPU", 0],
      ["g_3", "KIND_GPU", 1],
    ]);
  });

  it("keeps every name on its GPU when the count per GPU grows (a rescale adds only the tail)", () => {
    const group = (count: number) => ({ instance_group: [{ name: "g", kind: "KIND_GPU", count, gpus: [2, 5] }] });
    const two = where(group(2));
    const three = where(group(3));
    expect(three.slice(0, two.length)).toEqual(two);
    expect(three.slice(two.length)).toEqual([
      ["g_4", "KIND_GPU", 2],
      ["g_5", "KIND_GPU", 5],
    ]);
  });

  it("runs each group of a mixed CPU+GPU config where it says", () => {
    const config = {
      instance_group: [
        { kind: "KIND_CPU", count: 2 },
        { kind: "KIND_GPU", count: 1, gpus: [1] },
      ],
    };
    expect(where(config)).toEqual([
      ["m_0_0", "KIND_CPU", null],
      ["m_0_1", "KIND_CPU", null],
      ["m_1_0", "KIND_GPU", 1],
    ]);
    expect(placementOf("m", config, "m_1_0")).toEqual({ name: "m_1_0", kind: "KIND_GPU", device: 1 });
    expect(placementOf("m", config, "m_0_1")).toEqual({ name: "m_0_1", kind: "KIND_CPU", device: null });
  });

  it("uses every GPU of the host for a KIND_GPU group without gpus (GPU 0 when there is none)", () => {
    expect(where({ instance_group: [{ name: "g", kind: "KIND_GPU", count: 1 }] }, 3).map((p) => p[2])).toEqual([
      0, 1, 2,
    ]);
    expect(where({ instance_group: [{ name: "g", kind: "KIND_GPU", count: 1 }] }, 0)).toEqual([["g_0", "KIND_GPU", 0]]);
  });

  it("keeps CPU names as before and gives one CPU instance to a config without groups", () => {
    expect(where({})).toEqual([["m_0", "KIND_CPU", null]]);
    expect(where({ instance_group: [{ name: "c", count: 2 }] })).toEqual([
      ["c_0", "KIND_CPU", null],
      ["c_1", "KIND_CPU", null],
    ]);
    expect(where({ instance_group: [{ name: "x", kind: "KIND_MODEL" }] })).toEqual([["x_0", "KIND_MODEL", null]]);
  });
});

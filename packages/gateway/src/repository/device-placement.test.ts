import { describe, expect, it } from "vitest";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { deviceResidentGpu } from "./device-placement.js";

const native = (extra: Partial<ModelConfigJson>): ModelConfigJson =>
  ({ name: "m", backend: "operon_gpu_identity", ...extra }) as ModelConfigJson;

describe("deviceResidentGpu", () => {
  it("is the GPU of a native backend whose every instance runs on that one GPU", () => {
    expect(deviceResidentGpu(native({ instance_group: [{ kind: "KIND_GPU", count: 1, gpus: [1] }] }))).toBe(1);
    expect(
      deviceResidentGpu(
        native({
          instance_group: [
            { kind: "KIND_GPU", count: 1, gpus: [0] },
            { kind: "KIND_GPU", count: 2, gpus: [0] },
          ],
        }),
      ),
    ).toBe(0);
  });

  it("is undefined for CPU, several or unnamed GPUs, built-in backends, batching and the response cache", () => {
    const gpu0 = [{ kind: "KIND_GPU", count: 1, gpus: [0] }];
    expect(deviceResidentGpu(native({ instance_group: [{ kind: "KIND_CPU", count: 1 }] }))).toBeUndefined();
    expect(deviceResidentGpu(native({ instance_group: [{ kind: "KIND_GPU", count: 1 }] }))).toBeUndefined();
    expect(
      deviceResidentGpu(native({ instance_group: [{ kind: "KIND_GPU", count: 1, gpus: [0, 1] }] })),
    ).toBeUndefined();
    expect(
      deviceResidentGpu(
        native({
          instance_group: [
            { kind: "KIND_GPU", count: 1, gpus: [0] },
            { kind: "KIND_GPU", count: 1, gpus: [1] },
          ],
        }),
      ),
    ).toBeUndefined();
    expect(deviceResidentGpu(native({}))).toBeUndefined();
    expect(deviceResidentGpu(native({ backend: "onnxruntime", instance_group: gpu0 }))).toBeUndefined();
    expect(deviceResidentGpu(native({ instance_group: gpu0, dynamic_batching: {} }))).toBeUndefined();
    expect(deviceResidentGpu(native({ instance_group: gpu0, sequence_batching: {} }))).toBeUndefined();
    expect(deviceResidentGpu(native({ instance_group: gpu0, response_cache: { enable: true } }))).toBeUndefined();
  });
});

import { describe, expect, it } from "vitest";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { candidateOf, canSearchBatching, configOf, isShadowModelName, shadowModelName } from "./candidate-config.js";

const base: ModelConfigJson = {
  name: "resnet",
  platform: "onnxruntime_onnx",
  max_batch_size: 4,
  input: [{ name: "x", data_type: "TYPE_FP32", dims: [3] }],
  output: [{ name: "y", data_type: "TYPE_FP32", dims: [3] }],
  instance_group: [{ kind: "KIND_CPU", count: 1 }],
  dynamic_batching: { max_queue_delay_microseconds: 100, preserve_ordering: true },
};

describe("candidate configs", () => {
  it("reads the searched fields of a config", () => {
    expect(candidateOf(base)).toEqual({
      instanceCount: 1,
      maxBatchSize: 4,
      dynamicBatching: { preferredBatchSizes: [], maxQueueDelayUs: 100 },
    });
    expect(candidateOf({ name: "m" })).toEqual({ instanceCount: 1, maxBatchSize: 0, dynamicBatching: null });
    expect(
      candidateOf({ ...base, instance_group: [{ count: 2 }, { count: 1, kind: "KIND_GPU", gpus: [0, 1] }] })
        .instanceCount,
    ).toBe(4);
  });

  it("changes only the searched fields and keeps the rest of dynamic batching", () => {
    const config = configOf(
      base,
      { instanceCount: 2, maxBatchSize: 8, dynamicBatching: { preferredBatchSizes: [8], maxQueueDelayUs: 500 } },
      "resnet.search-0123abcd",
    );
    expect(config).toEqual({
      ...base,
      name: "resnet.search-0123abcd",
      max_batch_size: 8,
      instance_group: [{ kind: "KIND_CPU", count: 2 }],
      dynamic_batching: { preserve_ordering: true, preferred_batch_size: [8], max_queue_delay_microseconds: 500 },
    });
  });

  it("drops dynamic batching for a candidate without it, and round-trips", () => {
    const candidate = { instanceCount: 3, maxBatchSize: 2, dynamicBatching: null };
    const config = configOf(base, candidate);
    expect(config.dynamic_batching).toBeUndefined();
    expect(candidateOf(config)).toEqual(candidate);
  });

  it("keeps the GPUs a group names, spreading the count over them", () => {
    const gpuBase: ModelConfigJson = { ...base, instance_group: [{ kind: "KIND_GPU", count: 1, gpus: [0, 1] }] };
    expect(candidateOf(gpuBase).instanceCount).toBe(2);
    expect(configOf(gpuBase, { instanceCount: 4, maxBatchSize: 4, dynamicBatching: null }).instance_group).toEqual([
      { kind: "KIND_GPU", count: 2, gpus: [0, 1] },
    ]);
  });

  it("never searches the batching of a sequence model or one that does not batch", () => {
    expect(canSearchBatching(base)).toBe(true);
    expect(canSearchBatching({ ...base, max_batch_size: 0 })).toBe(false);
    expect(canSearchBatching({ ...base, sequence_batching: {} })).toBe(false);
  });

  it("names shadow models recognisably", () => {
    const name = shadowModelName("resnet", "0123abcd-ef45-6789-abcd-ef0123456789");
    expect(name).toBe("resnet.search-0123abcd");
    expect(isShadowModelName(name)).toBe(true);
    expect(isShadowModelName("resnet")).toBe(false);
  });
});

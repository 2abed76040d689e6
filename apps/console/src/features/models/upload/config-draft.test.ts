import { describe, expect, it } from "vitest";
import {
  dynamicBatchingOf,
  instanceGroupOf,
  tensorsOf,
  withDynamicBatching,
  withField,
  withInstanceGroup,
  withTensor,
} from "./config-draft";
import { errorAt, messageNotShown } from "./config-field-errors";
import { modelNameFromFileName } from "./model-name";
import { formatDims, parseDims, parseWholeNumber } from "./parse-values";

const SUGGESTED = {
  name: "mlp",
  max_batch_size: 4,
  input: [{ name: "input", data_type: "TYPE_FP32", dims: [4], format: "FORMAT_NONE" }],
  output: [{ name: "output", data_type: "TYPE_FP32", dims: [2] }],
  instance_group: [
    { kind: "KIND_CPU", count: 1 },
    { kind: "KIND_GPU", count: 2 },
  ],
  dynamic_batching: { preferred_batch_size: [2] },
};

describe("config drafts", () => {
  it("changes one tensor and keeps every field it does not know", () => {
    const next = withTensor(SUGGESTED, "input", 0, { dims: [5] });
    expect(tensorsOf(next, "input")).toEqual([
      { name: "input", data_type: "TYPE_FP32", dims: [5], format: "FORMAT_NONE" },
    ]);
    expect(SUGGESTED.input[0]!.dims).toEqual([4]);
    expect(next.output).toBe(SUGGESTED.output);
  });

  it("turns dynamic batching off and on, keeping its other settings while on", () => {
    expect(dynamicBatchingOf(SUGGESTED)).toEqual({ enabled: true, maxQueueDelayUs: undefined });
    const delayed = withDynamicBatching(SUGGESTED, { enabled: true, maxQueueDelayUs: 500 });
    expect(delayed.dynamic_batching).toEqual({ preferred_batch_size: [2], max_queue_delay_microseconds: 500 });
    const off = withDynamicBatching(delayed, { enabled: false, maxQueueDelayUs: 500 });
    expect("dynamic_batching" in off).toBe(false);
    expect(withDynamicBatching(off, { enabled: true, maxQueueDelayUs: undefined }).dynamic_batching).toEqual({});
  });

  it("edits the first instance group and leaves the others", () => {
    expect(instanceGroupOf(SUGGESTED)).toEqual({ count: 1, kind: "KIND_CPU", groups: 2 });
    const next = withInstanceGroup(SUGGESTED, { count: 3, kind: "KIND_AUTO" });
    expect(next.instance_group).toEqual([
      { kind: "KIND_AUTO", count: 3 },
      { kind: "KIND_GPU", count: 2 },
    ]);
    expect(instanceGroupOf({})).toEqual({ count: undefined, kind: "KIND_CPU", groups: 0 });
  });

  it("removes a top-level field set to undefined", () => {
    expect(withField(SUGGESTED, "max_batch_size", undefined)).not.toHaveProperty("max_batch_size");
    expect(withField(SUGGESTED, "max_batch_size", 0).max_batch_size).toBe(0);
  });
});

describe("form text", () => {
  it("reads dims separated by commas or spaces, and refuses anything else", () => {
    expect(parseDims("3, 224 224")).toEqual({ ok: true, value: [3, 224, 224] });
    expect(parseDims(" -1 ")).toEqual({ ok: true, value: [-1] });
    expect(parseDims("")).toEqual({ ok: true, value: [] });
    expect(parseDims("3, x").ok).toBe(false);
    expect(parseDims("1.5").ok).toBe(false);
    expect(formatDims([3, 224])).toBe("3, 224");
  });

  it("reads whole numbers; empty is allowed only when optional", () => {
    expect(parseWholeNumber(" 8 ", false)).toEqual({ ok: true, value: 8 });
    expect(parseWholeNumber("", true)).toEqual({ ok: true, value: undefined });
    expect(parseWholeNumber("", false).ok).toBe(false);
    expect(parseWholeNumber("2.5", true).ok).toBe(false);
  });

  it("makes a model name from a file name", () => {
    expect(modelNameFromFileName("resnet 50.onnx")).toBe("resnet_50");
    expect(modelNameFromFileName(".hidden.ONNX")).toBe("hidden");
    expect(modelNameFromFileName(".onnx")).toBe("");
    // model.onnx names no model: its folder does when the browser says (a dropped folder), else the person is asked.
    expect(modelNameFromFileName("model.onnx")).toBe("");
    expect(modelNameFromFileName("model.onnx", "resnet50/1/model.onnx")).toBe("resnet50");
    expect(modelNameFromFileName("model.onnx", "models/bert base/model.onnx")).toBe("bert_base");
    expect(modelNameFromFileName("model.onnx", "7/model.onnx")).toBe("");
  });
});

describe("config field errors", () => {
  const problem = {
    message: "the config is not valid for this model: input[0].dims[1]: bad; version_policy: serves none",
    appCode: "VALIDATION_FAILED",
    fieldErrors: [
      { path: "input[0].dims[1]", message: "bad" },
      { path: "version_policy", message: "serves none" },
    ],
    retryAfterSecs: undefined,
  };

  it("shows an error at its field and the fields below it, unless exact", () => {
    expect(errorAt(problem, { path: "input[0].dims" })).toBe("bad");
    expect(errorAt(problem, { path: "input", exact: true })).toBeUndefined();
    expect(errorAt(problem, { path: "input[1].dims" })).toBeUndefined();
  });

  it("repeats the message as an alert only when a field error has no field on the form", () => {
    expect(messageNotShown(problem, [{ path: "input[0].dims" }])).toBe(problem.message);
    expect(messageNotShown(problem, [{ path: "input[0].dims" }, { path: "version_policy" }])).toBeUndefined();
    expect(messageNotShown({ ...problem, fieldErrors: [] }, [{ path: "input[0].dims" }])).toBe(problem.message);
  });
});

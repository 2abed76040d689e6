import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import ort from "onnxruntime-node";
import { afterAll, describe, expect, it } from "vitest";
import { writeAddSubModel } from "@operon/testing/onnx-model-writer";
import { isKnownBinding, openSyncSession } from "./ort-sync-session.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "operon-ort-sync-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const OPTIONS: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 1, interOpNumThreads: 1 };

function addSubFile(): string {
  const file = path.join(dir, "add_sub.onnx");
  writeFileSync(file, writeAddSubModel({ datatype: "FP32", shape: ["batch", 4] }));
  return file;
}

const feedsOf = (a: number[], b: number[]) => ({
  INPUT0: new ort.Tensor("float32", Float32Array.from(a), [1, 4]),
  INPUT1: new ort.Tensor("float32", Float32Array.from(b), [1, 4]),
});

describe("openSyncSession", () => {
  it("reports the metadata the public API reports and computes the same outputs, without a promise", async () => {
    const file = addSubFile();
    const sync = openSyncSession(file, OPTIONS);
    const reference = await ort.InferenceSession.create(file, OPTIONS);
    expect(sync).toBeDefined();
    expect(sync!.inputMetadata).toEqual(reference.inputMetadata);
    expect(sync!.outputMetadata).toEqual(reference.outputMetadata);
    expect(sync!.outputNames).toEqual(reference.outputNames);

    const results = sync!.run(feedsOf([1, 2, 3, 4], [4, 3, 2, 1]), undefined);
    expect(results).not.toBeInstanceOf(Promise);
    const expected = await reference.run(feedsOf([1, 2, 3, 4], [4, 3, 2, 1]));
    expect(Object.keys(results)).toEqual(["OUTPUT0", "OUTPUT1"]);
    expect(results.OUTPUT0).toBeInstanceOf(ort.Tensor);
    expect(Array.from(results.OUTPUT0!.data as Float32Array)).toEqual(
      Array.from(expected.OUTPUT0!.data as Float32Array),
    );
    expect(Array.from(results.OUTPUT1!.data as Float32Array)).toEqual([-3, -1, 1, 3]);
    expect(results.OUTPUT1!.dims).toEqual([1, 4]);
    sync!.release();
    await reference.release();
  });

  it("computes only the outputs asked for", () => {
    const sync = openSyncSession(addSubFile(), OPTIONS)!;
    const results = sync.run(feedsOf([1, 1, 1, 1], [2, 2, 2, 2]), ["OUTPUT1"]);
    expect(Object.keys(results)).toEqual(["OUTPUT1"]);
    expect(Array.from(results.OUTPUT1!.data as Float32Array)).toEqual([-1, -1, -1, -1]);
    sync.release();
  });

  it("throws ONNX Runtime's own error for a bad run and for a file that is not a model", () => {
    const sync = openSyncSession(addSubFile(), OPTIONS)!;
    const wrongType = {
      ...feedsOf([1, 1, 1, 1], [1, 1, 1, 1]),
      INPUT1: new ort.Tensor("int32", Int32Array.from([1, 1, 1, 1]), [1, 4]),
    };
    expect(() => sync.run(wrongType, undefined)).toThrow(/INPUT1|type/i);
    sync.release();
    const notAModel = path.join(dir, "not-a-model.onnx");
    writeFileSync(notAModel, "this is not protobuf");
    expect(() => openSyncSession(notAModel, OPTIONS)).toThrow(/protobuf|parsing|load/i);
  });
});

describe("isKnownBinding", () => {
  it("accepts onnxruntime-node's binding and refuses a module of another shape (the public API then serves)", async () => {
    const { createRequire } = await import("node:module");
    expect(isKnownBinding(createRequire(import.meta.url)("onnxruntime-node/dist/binding.js"))).toBe(true);
    expect(isKnownBinding(undefined)).toBe(false);
    expect(isKnownBinding({ initOrt() {}, binding: {} })).toBe(false);
    class WithoutRun {
      loadModel() {}
      dispose() {}
    }
    expect(isKnownBinding({ initOrt() {}, binding: { InferenceSession: WithoutRun } })).toBe(false);
  });
});

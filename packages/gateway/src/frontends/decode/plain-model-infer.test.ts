import { mutateBytes, seededRandom } from "@operon/testing/seeded-fuzz";
import { beforeAll, describe, expect, it } from "vitest";
import type { WireInferRequest } from "../grpc/grpc-wire.js";
import { loadModelInferCodecs } from "../grpc/testing/model-infer-codecs.js";
import { decodeGrpcInferGenerically } from "./decode-tasks.js";
import { decodePlainModelInfer } from "./plain-model-infer.js";

/** What the generic decoder makes of a message: its request, or its error's text. */
function generic(message: Buffer, deserialize: (message: Buffer) => WireInferRequest): unknown {
  try {
    return decodeGrpcInferGenerically(message, deserialize);
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** The plain reader's answer in the same terms: its request, its error's text, or undefined (not plain). */
function plain(message: Buffer): unknown {
  try {
    return decodePlainModelInfer(message);
  } catch (error) {
    return { error: (error as Error).message };
  }
}

const FP32x4 = Buffer.from(new Float32Array([1, 2, 3, 4]).buffer);

const PLAIN = {
  model_name: "add_sub",
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 4] },
    { name: "INPUT1", datatype: "FP32", shape: [1, 4] },
  ],
  raw_input_contents: [FP32x4, Buffer.from(new Float32Array([5, 6, 7, 8]).buffer)],
};

describe("decodePlainModelInfer", () => {
  let serialize: (message: object) => Buffer;
  let deserialize: (message: Buffer) => WireInferRequest;
  beforeAll(async () => {
    ({ serializeRequest: serialize, deserializeRequest: deserialize } = await loadModelInferCodecs());
  });

  it("reads what Triton's clients send for a plain inference, exactly as the generic decoder does", () => {
    const cases = [
      PLAIN,
      { ...PLAIN, model_version: "3", id: "req-7", outputs: [{ name: "OUTPUT0" }, { name: "OUTPUT1" }] },
      {
        model_name: "m",
        inputs: [{ name: "X", datatype: "INT64", shape: [2, 1] }],
        raw_input_contents: [Buffer.alloc(16)],
      },
      {
        model_name: "m",
        inputs: [{ name: "S", datatype: "BYTES", shape: [1] }],
        raw_input_contents: [Buffer.from([1, 0, 0, 0, 0x61])],
      },
      {
        model_name: "m",
        inputs: [{ name: "E", datatype: "FP32", shape: [0, 4] }],
        raw_input_contents: [Buffer.alloc(0)],
      },
    ];
    for (const message of cases) {
      const bytes = serialize(message);
      const read = decodePlainModelInfer(bytes);
      expect(read).toBeDefined();
      expect(read).toEqual(generic(bytes, deserialize));
    }
    // Tensor data are views of the message, not copies.
    const bytes = serialize(PLAIN);
    expect(decodePlainModelInfer(bytes)!.inputs[0]!.data.buffer).toBe(bytes.buffer);
  });

  it("refuses a raw input of the wrong size with the generic decoder's error", () => {
    const bytes = serialize({ ...PLAIN, raw_input_contents: [FP32x4, Buffer.alloc(3)] });
    expect(plain(bytes)).toEqual(generic(bytes, deserialize));
    expect(plain(bytes)).toMatchObject({ error: expect.stringContaining("INPUT1") });
  });

  it("leaves every other message to the generic decoder", () => {
    const others = [
      { ...PLAIN, parameters: { priority: { int64_param: 1 } } },
      { ...PLAIN, inputs: [{ ...PLAIN.inputs[0], parameters: { x: { bool_param: true } } }, PLAIN.inputs[1]] },
      { ...PLAIN, outputs: [{ name: "OUTPUT0", parameters: { binary_data: { bool_param: true } } }] },
      { model_name: "m", inputs: [{ name: "X", datatype: "FP32", shape: [1], contents: { fp32_contents: [1] } }] },
      { ...PLAIN, raw_input_contents: [FP32x4] },
      { ...PLAIN, inputs: [{ ...PLAIN.inputs[0], datatype: "FLOAT" }, PLAIN.inputs[1]] },
      { ...PLAIN, inputs: [{ ...PLAIN.inputs[0], shape: [-1, 4] }, PLAIN.inputs[1]] },
      { ...PLAIN, inputs: [{ ...PLAIN.inputs[0], shape: [2 ** 50, 4] }, PLAIN.inputs[1]] },
      { ...PLAIN, inputs: [{ ...PLAIN.inputs[0], shape: Array(65).fill(1) }, PLAIN.inputs[1]] },
      { ...PLAIN, model_name: "modèle" },
    ];
    for (const message of others) expect(decodePlainModelInfer(serialize(message))).toBeUndefined();
    // An unknown field (a newer client's) is skipped by the generic decoder: not plain here.
    const unknown = Buffer.concat([serialize(PLAIN), Buffer.from([0x52, 0x01, 0x78])]);
    expect(decodePlainModelInfer(unknown)).toBeUndefined();
  });

  it("agrees with the generic decoder on 3000 byte-level mutations of a plain message", () => {
    const next = seededRandom(78);
    const valid = serialize({ ...PLAIN, id: "r", outputs: [{ name: "OUTPUT0" }] });
    let readHere = 0;
    for (let index = 0; index < 3000; index += 1) {
      const mutated = mutateBytes(valid, next);
      const here = plain(mutated);
      if (here === undefined) continue;
      readHere += 1;
      expect(here, `case ${index}: ${mutated.toString("hex")}`).toEqual(generic(mutated, deserialize));
    }
    // Many mutations still leave a plain message (a changed byte of tensor data, a shorter name).
    expect(readHere).toBeGreaterThan(300);
  });
});

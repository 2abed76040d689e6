import type { InferResponse } from "@operon/protocol/inference";
import { beforeAll, describe, expect, it } from "vitest";
import { encodeInferResponse } from "./grpc-infer-codec.js";
import { encodePlainModelInferResponse } from "./plain-model-infer-response.js";
import { loadModelInferCodecs } from "./testing/model-infer-codecs.js";

const f32 = (...values: number[]) => Buffer.from(new Float32Array(values).buffer);

describe("encodePlainModelInferResponse", () => {
  let serialize: (message: object) => Buffer;
  let deserialize: (message: Buffer) => object;
  beforeAll(async () => {
    ({ serializeResponse: serialize, deserializeResponse: deserialize } = await loadModelInferCodecs());
  });

  /** What a client decodes from the generic encoding (protobufjs) of the same response. */
  const generic = (response: InferResponse, requestId?: string) =>
    deserialize(serialize(encodeInferResponse(response, requestId)));

  it("writes bytes a client decodes to the same message as protobufjs's encoding", () => {
    const responses: Array<[InferResponse, string | undefined]> = [
      [
        {
          modelName: "add_sub",
          modelVersion: "1",
          outputs: [
            { name: "OUTPUT0", datatype: "FP32", shape: [1, 4], data: f32(1, 2, 3, 4) },
            { name: "OUTPUT1", datatype: "FP32", shape: [1, 4], data: f32(-1, 0, 1, 2) },
          ],
        },
        undefined,
      ],
      // The client's id when the response has none; long names and shapes need multi-byte varints.
      [
        {
          modelName: "m".repeat(200),
          modelVersion: "",
          parameters: {},
          outputs: [{ name: "ÿ-out", datatype: "INT64", shape: [300, 70_000, 0], data: Buffer.alloc(0) }],
        },
        "req-9",
      ],
      [{ modelName: "m", modelVersion: "2", id: "own", outputs: [] }, "ignored"],
      [
        {
          modelName: "m",
          modelVersion: "1",
          outputs: [{ name: "big", datatype: "UINT8", shape: [20_000], data: Buffer.alloc(20_000, 7) }],
        },
        undefined,
      ],
    ];
    for (const [response, requestId] of responses) {
      const bytes = encodePlainModelInferResponse(response, requestId);
      expect(bytes).toBeDefined();
      expect(deserialize(bytes!)).toEqual(generic(response, requestId));
    }
  });

  it("leaves a response with parameters, or a shape it cannot write, to protobufjs", () => {
    const output = { name: "o", datatype: "FP32" as const, shape: [1], data: f32(1) };
    const base = { modelName: "m", modelVersion: "1" };
    expect(
      encodePlainModelInferResponse({ ...base, parameters: { sequence_id: 3 }, outputs: [output] }, undefined),
    ).toBeUndefined();
    expect(
      encodePlainModelInferResponse(
        { ...base, outputs: [{ ...output, parameters: { classes: "x" } } as never] },
        undefined,
      ),
    ).toBeUndefined();
    expect(
      encodePlainModelInferResponse({ ...base, outputs: [{ ...output, shape: [-1] }] }, undefined),
    ).toBeUndefined();
    expect(
      encodePlainModelInferResponse({ ...base, outputs: [{ ...output, shape: [2 ** 60] }] }, undefined),
    ).toBeUndefined();
  });
});

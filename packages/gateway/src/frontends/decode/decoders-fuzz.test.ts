import { httpStatusOf, isOperonError } from "@operon/protocol/errors";
import { beforeAll, describe, expect, it } from "vitest";
import type { WireInferRequest } from "../grpc/grpc-wire.js";
import { loadModelInferCodecs } from "../grpc/testing/model-infer-codecs.js";
import { decodeGrpcInfer, decodeHttpInfer } from "./decode-tasks.js";
import { mutateBytes, seededRandom } from "@operon/testing/seeded-fuzz";

// A short, bounded fuzz of the request decoders (fixed seed, a few thousand
// mutated valid requests): every input either decodes or fails with an
// OperonError a client is to blame for (a 4xx / INVALID_ARGUMENT-like kind),
// never a crash or an INTERNAL error.

/** Structural mutations of the JSON request: wrong types and values where the decoder expects others. */
const WEIRD: unknown[] = [
  null,
  -1,
  1e308,
  -0,
  2 ** 53,
  "x",
  "",
  [],
  {},
  [[1]],
  true,
  "FP32",
  "BYTES",
  [-1],
  [1e9, 1e9],
  "\u0000",
];

function mutateJson(value: unknown, next: () => number, depth = 0): unknown {
  if (next() < 0.08 + depth * 0.02) return WEIRD[Math.floor(next() * WEIRD.length)];
  if (Array.isArray(value)) return value.map((item) => mutateJson(item, next, depth + 1));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) if (next() > 0.05) out[key] = mutateJson(item, next, depth + 1);
    return out;
  }
  return value;
}

const VALID_JSON = {
  id: "req-1",
  parameters: { priority: 1 },
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    {
      name: "INPUT1",
      datatype: "INT32",
      shape: [2, 2],
      data: [
        [1, 2],
        [3, 4],
      ],
    },
    { name: "TEXT", datatype: "BYTES", shape: [2], data: ["a", "bc"] },
  ],
  outputs: [{ name: "OUTPUT0", parameters: { binary_data: true } }],
};

function clientFault(error: unknown): string | undefined {
  if (!isOperonError(error)) return `not an OperonError: ${(error as Error)?.stack ?? String(error)}`;
  const status = httpStatusOf(error.kind);
  return status >= 400 && status < 500 ? undefined : `${error.kind} (${status}): ${error.message}`;
}

function expectClientFaults(run: (index: number) => void, cases: number): { decoded: number; refused: number } {
  let decoded = 0;
  let refused = 0;
  const problems: string[] = [];
  for (let index = 0; index < cases; index += 1) {
    try {
      run(index);
      decoded += 1;
    } catch (error) {
      refused += 1;
      const problem = clientFault(error);
      if (problem !== undefined && problems.length < 5) problems.push(`case ${index}: ${problem}`);
    }
  }
  expect(problems).toEqual([]);
  return { decoded, refused };
}

describe("decoder fuzz (seeded)", () => {
  const target = { modelName: "m" };

  it("HTTP JSON bodies: 2000 byte-level and structural mutations", () => {
    const next = seededRandom(12);
    const valid = Buffer.from(JSON.stringify(VALID_JSON));
    const result = expectClientFaults((index) => {
      const body =
        index % 2 === 0 ? mutateBytes(valid, next) : Buffer.from(JSON.stringify(mutateJson(VALID_JSON, next)));
      decodeHttpInfer(body, undefined, target);
    }, 2000);
    expect(result.refused).toBeGreaterThan(500);
  });

  it("HTTP binary bodies: 1500 mutations of header, header length and tensor bytes", () => {
    const next = seededRandom(34);
    const header = Buffer.from(
      JSON.stringify({
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [1, 4], parameters: { binary_data_size: 16 } },
          { name: "TEXT", datatype: "BYTES", shape: [1], parameters: { binary_data_size: 7 } },
        ],
      }),
    );
    const tensor = Buffer.alloc(16, 1);
    const text = Buffer.concat([Buffer.from([3, 0, 0, 0]), Buffer.from("abc")]);
    const body = Buffer.concat([header, tensor, text]);
    expect(() => decodeHttpInfer(body, header.length, target)).not.toThrow();
    expectClientFaults(() => {
      const mutated = mutateBytes(body, next);
      const headerLength = next() < 0.8 ? header.length : Math.floor(next() * (mutated.length + 8)) - 4;
      decodeHttpInfer(mutated, headerLength, target);
    }, 1500);
  });

  describe("gRPC ModelInferRequest", () => {
    let serialize: (message: object) => Buffer;
    let deserialize: (message: Buffer) => WireInferRequest;
    beforeAll(async () => {
      ({ serializeRequest: serialize, deserializeRequest: deserialize } = await loadModelInferCodecs());
    });

    it("2000 byte-level mutations of a valid message", () => {
      const next = seededRandom(56);
      const valid = serialize({
        model_name: "m",
        id: "r",
        parameters: { priority: { int64_param: 1 } },
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [1, 4] },
          { name: "TEXT", datatype: "BYTES", shape: [1] },
        ],
        outputs: [{ name: "OUTPUT0" }],
        raw_input_contents: [Buffer.alloc(16, 2), Buffer.concat([Buffer.from([3, 0, 0, 0]), Buffer.from("abc")])],
      });
      expect(() => decodeGrpcInfer(valid, deserialize)).not.toThrow();
      const result = expectClientFaults(() => decodeGrpcInfer(mutateBytes(valid, next), deserialize), 2000);
      expect(result.refused).toBeGreaterThan(200);
    });
  });
});

import type * as grpc from "@grpc/grpc-js";
import { httpStatusOf, isOperonError } from "@operon/protocol/errors";
import { beforeAll, describe, expect, it } from "vitest";
import { INFERENCE_SERVICE, loadGrpcProtos, type WireInferRequest } from "../grpc/grpc-wire.js";
import { decodeGrpcInfer, decodeHttpInfer } from "./decode-tasks.js";

// A short, bounded fuzz of the request decoders (fixed seed, a few thousand
// mutated valid requests): every input either decodes or fails with an
// OperonError a client is to blame for (a 4xx / INVALID_ARGUMENT-like kind),
// never a crash or an INTERNAL error.

/** mulberry32: a small deterministic PRNG, so a failure replays. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const INTERESTING = [0, 1, 0x7f, 0x80, 0xff, 0x22, 0x5b, 0x5d, 0x7b, 0x7d, 0x2c, 0x3a, 0x30, 0x2d, 0x65, 0x08, 0x0a, 0x12, 0x1a, 0x22];

function mutate(bytes: Buffer, next: () => number): Buffer {
  const out = [...bytes];
  const rounds = 1 + Math.floor(next() * 4);
  for (let round = 0; round < rounds; round += 1) {
    const at = Math.floor(next() * (out.length + 1));
    const pick = next();
    if (pick < 0.35 && out.length > 0) out[Math.min(at, out.length - 1)] = INTERESTING[Math.floor(next() * INTERESTING.length)]!;
    else if (pick < 0.55 && out.length > 0) out[Math.min(at, out.length - 1)] = Math.floor(next() * 256);
    else if (pick < 0.7) out.splice(at, 0, INTERESTING[Math.floor(next() * INTERESTING.length)]!);
    else if (pick < 0.85) out.splice(at, 1 + Math.floor(next() * 8));
    else out.length = Math.floor(next() * out.length);
  }
  return Buffer.from(out);
}

/** Structural mutations of the JSON request: wrong types and values where the decoder expects others. */
const WEIRD: unknown[] = [null, -1, 1e308, -0, 2 ** 53, "x", "", [], {}, [[1]], true, "FP32", "BYTES", [-1], [1e9, 1e9], "\u0000"];

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
    { name: "INPUT1", datatype: "INT32", shape: [2, 2], data: [[1, 2], [3, 4]] },
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
    const next = random(12);
    const valid = Buffer.from(JSON.stringify(VALID_JSON));
    const result = expectClientFaults((index) => {
      const body = index % 2 === 0 ? mutate(valid, next) : Buffer.from(JSON.stringify(mutateJson(VALID_JSON, next)));
      decodeHttpInfer(body, undefined, target);
    }, 2000);
    expect(result.refused).toBeGreaterThan(500);
  });

  it("HTTP binary bodies: 1500 mutations of header, header length and tensor bytes", () => {
    const next = random(34);
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
      const mutated = mutate(body, next);
      const headerLength = next() < 0.8 ? header.length : Math.floor(next() * (mutated.length + 8)) - 4;
      decodeHttpInfer(mutated, headerLength, target);
    }, 1500);
  });

  describe("gRPC ModelInferRequest", () => {
    let serialize: (message: object) => Buffer;
    let deserialize: (message: Buffer) => WireInferRequest;
    beforeAll(async () => {
      const definition = await loadGrpcProtos();
      const method = (definition[INFERENCE_SERVICE] as unknown as Record<string, grpc.MethodDefinition<object, unknown>>)["ModelInfer"]!;
      serialize = method.requestSerialize as (message: object) => Buffer;
      deserialize = method.requestDeserialize as (message: Buffer) => WireInferRequest;
    });

    it("2000 byte-level mutations of a valid message", () => {
      const next = random(56);
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
      const result = expectClientFaults(() => decodeGrpcInfer(mutate(valid, next), deserialize), 2000);
      expect(result.refused).toBeGreaterThan(200);
    });
  });
});

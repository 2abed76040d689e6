import { describe, expect, it } from "vitest";
import { mutateBytes, seededRandom } from "@operon/testing/seeded-fuzz";
import { decodeHttpInfer } from "../decode/decode-tasks.js";
import { DEFAULT_JSON_BUDGET } from "./json-budget.js";
import { BinaryHeaderMemo } from "./binary-header-memo.js";

const target = { modelName: "add_sub" };

/** A binary /infer body: the JSON header, then each input's bytes; and the header's length. */
function binaryBody(header: object, ...tensors: Buffer[]): { body: Buffer; headerLength: number } {
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...tensors]), headerLength: json.length };
}

const HEADER = {
  parameters: { binary_data_output: true, tag: "a" },
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 2], parameters: { binary_data_size: 8, note: "x" } },
    { name: "INPUT1", datatype: "INT32", shape: [1, 2], parameters: { binary_data_size: 8 } },
  ],
  outputs: [{ name: "OUTPUT0", parameters: { binary_data: true } }],
};

function tensors(seed: number): Buffer[] {
  return [Buffer.from(new Float32Array([seed, seed + 1]).buffer), Buffer.from(new Int32Array([seed, -seed]).buffer)];
}

/** What decoding without a memo says: the result, or the error's message. */
function plainDecode(body: Buffer, headerLength: number): unknown {
  try {
    return decodeHttpInfer(body, headerLength, target);
  } catch (error) {
    return (error as Error).message;
  }
}

function memoDecode(memo: BinaryHeaderMemo, body: Buffer, headerLength: number): unknown {
  try {
    return decodeHttpInfer(body, headerLength, target, DEFAULT_JSON_BUDGET, memo);
  } catch (error) {
    return (error as Error).message;
  }
}

describe("BinaryHeaderMemo", () => {
  it("decodes a repeated header from the memo to exactly what parsing it gives, each request with its own data", () => {
    const memo = new BinaryHeaderMemo();
    const first = binaryBody(HEADER, ...tensors(1));
    const second = binaryBody(HEADER, ...tensors(5));
    expect(memoDecode(memo, first.body, first.headerLength)).toEqual(plainDecode(first.body, first.headerLength));
    const header = first.body.subarray(0, first.headerLength);
    expect(memo.lookup("add_sub", header)).toBeDefined();
    const decoded = decodeHttpInfer(second.body, second.headerLength, target, DEFAULT_JSON_BUDGET, memo);
    expect(decoded).toEqual(plainDecode(second.body, second.headerLength));
    expect(new Float32Array(new Uint8Array(decoded.request.inputs[0]!.data).buffer)).toEqual(new Float32Array([5, 6]));
  });

  it("gives every request its own parameters, shapes and requested outputs: changing one leaves the next alone", () => {
    const memo = new BinaryHeaderMemo();
    const { body, headerLength } = binaryBody(HEADER, ...tensors(1));
    // The first request is decoded and remembered, the second is a hit: each one changed as a later step might.
    for (let i = 0; i < 2; i++) {
      const request = decodeHttpInfer(body, headerLength, target, DEFAULT_JSON_BUDGET, memo).request;
      request.parameters!["priority"] = 1;
      request.inputs[0]!.shape[0] = 7;
      request.inputs[0]!.parameters!["note"] = "changed";
      request.outputs![0]!.parameters!["binary_data"] = false;
    }
    const second = decodeHttpInfer(body, headerLength, target, DEFAULT_JSON_BUDGET, memo).request;
    expect(second).toEqual((plainDecode(body, headerLength) as { request: unknown }).request);
    expect(second.parameters).toEqual({ tag: "a" });
    expect(second.inputs[0]!.shape).toEqual([1, 2]);
  });

  it("refuses tensor data that does not fit a remembered header as parsing does", () => {
    const memo = new BinaryHeaderMemo();
    const good = binaryBody(HEADER, ...tensors(1));
    memoDecode(memo, good.body, good.headerLength);
    const short = good.body.subarray(0, good.body.length - 3);
    const refused = memoDecode(memo, short, good.headerLength);
    expect(typeof refused).toBe("string");
    expect(refused).toEqual(plainDecode(short, good.headerLength));
  });

  it("misses on a header that differs by one byte, and then remembers the new one", () => {
    const memo = new BinaryHeaderMemo();
    const a = binaryBody(HEADER, ...tensors(1));
    const b = binaryBody({ ...HEADER, parameters: { binary_data_output: true, tag: "b" } }, ...tensors(1));
    memoDecode(memo, a.body, a.headerLength);
    expect(memo.lookup("add_sub", b.body.subarray(0, b.headerLength))).toBeUndefined();
    expect(memoDecode(memo, b.body, b.headerLength)).toEqual(plainDecode(b.body, b.headerLength));
    expect(memo.lookup("add_sub", b.body.subarray(0, b.headerLength))).toBeDefined();
    expect(memo.lookup("add_sub", a.body.subarray(0, a.headerLength))).toBeUndefined();
  });

  it("keeps a copy of the header, never the body: a body changed after decoding does not change the memo", () => {
    const memo = new BinaryHeaderMemo();
    const { body, headerLength } = binaryBody(HEADER, ...tensors(1));
    const original = Buffer.from(body.subarray(0, headerLength));
    memoDecode(memo, body, headerLength);
    body.fill(0x20, 0, headerLength);
    expect(memo.lookup("add_sub", original)).toBeDefined();
    expect(memo.lookup("add_sub", body.subarray(0, headerLength))).toBeUndefined();
  });

  it("stays bounded: no header over maxHeaderBytes, none naming shared memory, at most maxEntries models", () => {
    const memo = new BinaryHeaderMemo(2, 512);
    const long = binaryBody({ ...HEADER, id: "x".repeat(600) }, ...tensors(1));
    memoDecode(memo, long.body, long.headerLength);
    expect(memo.size).toBe(0);
    const shm = binaryBody({
      inputs: [
        {
          name: "INPUT0",
          datatype: "FP32",
          shape: [1, 2],
          parameters: { shared_memory_region: "r", binary_data_size: 0 },
        },
      ],
    });
    // Refused either way (a region and data); never remembered.
    memoDecode(memo, shm.body, shm.headerLength);
    expect(memo.size).toBe(0);
    const { body, headerLength } = binaryBody(HEADER, ...tensors(1));
    for (const modelName of ["a", "b", "c"]) {
      decodeHttpInfer(body, headerLength, { modelName }, DEFAULT_JSON_BUDGET, memo);
    }
    expect(memo.size).toBe(2);
    const header = body.subarray(0, headerLength);
    expect(memo.lookup("a", header)).toBeUndefined();
    expect(memo.lookup("c", header)).toBeDefined();
  });

  it("answers 1,000 mutated bodies exactly as decoding without it, with the valid header remembered", () => {
    const next = seededRandom(78);
    const memo = new BinaryHeaderMemo();
    const { body, headerLength } = binaryBody(HEADER, ...tensors(3));
    for (let i = 0; i < 1000; i++) {
      // Every other body is the valid one again, so the memo keeps being asked about the valid header.
      const candidate = i % 2 === 0 ? body : mutateBytes(body, next);
      expect(memoDecode(memo, candidate, headerLength)).toEqual(plainDecode(candidate, headerLength));
    }
  });
});

import { describe, expect, it } from "vitest";
import type { Tensor } from "@operon/protocol/tensor";
import {
  ENTRY_OVERHEAD_BYTES,
  ResponseCache,
  entryBytes,
  responseCacheKey,
  type ResponseCacheKeyParts,
} from "./response-cache.js";

function fp32(name: string, values: number[], shape = [values.length]): Tensor {
  const array = Float32Array.from(values);
  return { name, datatype: "FP32", shape, data: Buffer.from(array.buffer) };
}

function parts(extra: Partial<ResponseCacheKeyParts> = {}): ResponseCacheKeyParts {
  return {
    model: "add_sub",
    version: "1",
    inputs: [fp32("INPUT0", [1, 2, 3, 4]), fp32("INPUT1", [5, 6, 7, 8])],
    outputs: undefined,
    ...extra,
  };
}

/** A response of one output holding `bytes` bytes of data. */
function response(bytes: number, fill = 1): { outputs: Tensor[] } {
  return { outputs: [{ name: "OUT", datatype: "UINT8", shape: [bytes], data: Buffer.alloc(bytes, fill) }] };
}

const KEY_LENGTH = 64;
/** What an entry of response(bytes) costs against the budget. */
const cost = (bytes: number): number => entryBytes("k".repeat(KEY_LENGTH), response(bytes).outputs);

describe("responseCacheKey", () => {
  it("is a hex SHA-256 digest, the same for the same request", () => {
    const key = responseCacheKey(parts());
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(responseCacheKey(parts())).toBe(key);
  });

  it("does not depend on input order", () => {
    const [a, b] = parts().inputs;
    expect(responseCacheKey(parts({ inputs: [b!, a!] }))).toBe(responseCacheKey(parts()));
  });

  it("changes with every input byte", () => {
    const base = responseCacheKey(parts());
    const input = fp32("INPUT0", [1, 2, 3, 4]);
    for (let byte = 0; byte < input.data.length; byte += 1) {
      const data = Buffer.from(input.data);
      data[byte] = data[byte]! ^ 0x01;
      const changed = responseCacheKey(parts({ inputs: [{ ...input, data }, fp32("INPUT1", [5, 6, 7, 8])] }));
      expect(changed, `byte ${byte}`).not.toBe(base);
    }
  });

  it("changes with the shape, datatype and name of an input, even when the bytes are the same", () => {
    const base = responseCacheKey(parts());
    const [input0, input1] = parts().inputs as [Tensor, Tensor];
    const variants: Tensor[][] = [
      [{ ...input0, shape: [2, 2] }, input1],
      [{ ...input0, shape: [1, 4] }, input1],
      [{ ...input0, datatype: "INT32" }, input1],
      [{ ...input0, datatype: "UINT32" }, input1],
      [{ ...input0, name: "INPUT2" }, input1],
      [input0],
      [input0, input1, fp32("INPUT2", [])],
      // the same bytes, split differently between the inputs
      [fp32("INPUT0", [1, 2, 3]), fp32("INPUT1", [4, 5, 6, 7, 8])],
      // names and values swapped
      [
        { ...input0, name: "INPUT1" },
        { ...input1, name: "INPUT0" },
      ],
    ];
    const keys = variants.map((inputs) => responseCacheKey(parts({ inputs })));
    for (const key of keys) expect(key).not.toBe(base);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("changes with the model, version, scope and requested outputs", () => {
    const keys = [
      responseCacheKey(parts()),
      responseCacheKey(parts({ model: "add_sub2" })),
      responseCacheKey(parts({ version: "2" })),
      responseCacheKey(parts({ scope: "2" })),
      responseCacheKey(parts({ outputs: [] })),
      responseCacheKey(parts({ outputs: ["OUTPUT0"] })),
      responseCacheKey(parts({ outputs: ["OUTPUT1"] })),
      responseCacheKey(parts({ outputs: ["OUTPUT0", "OUTPUT1"] })),
      responseCacheKey(parts({ outputs: ["OUTPUT1", "OUTPUT0"] })),
      // field boundaries are length-prefixed: "ab"+"c" differs from "a"+"bc"
      responseCacheKey(parts({ model: "add_sub1", version: "" })),
    ];
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe("ResponseCache", () => {
  it("misses, then hits with the same outputs", () => {
    const cache = new ResponseCache(10_000);
    const key = responseCacheKey(parts());
    expect(cache.get(key)).toBeUndefined();
    const outputs = [fp32("OUTPUT0", [6, 8, 10, 12]), fp32("OUTPUT1", [-4, -4, -4, -4])];
    expect(cache.set(key, { outputs })).toBe(true);
    const hit = cache.get(key);
    expect(hit?.outputs).toEqual(outputs);
    hit!.outputs.forEach((tensor, index) => expect(tensor.data.equals(outputs[index]!.data)).toBe(true));
    expect(hit!.outputs[0]!.data).not.toBe(outputs[0]!.data); // its own copy
    expect(cache.get(responseCacheKey(parts({ version: "2" })))).toBeUndefined();
    expect(cache.size).toBe(1);
  });

  it("copies outputs on insert: later changes to the response's buffers or shapes do not reach the cache", () => {
    const cache = new ResponseCache(10_000);
    const outputs = [fp32("OUTPUT0", [1, 2, 3, 4])];
    cache.set("k", { outputs });
    outputs[0]!.data.fill(0);
    outputs[0]!.shape.push(9);
    const first = cache.get("k")!;
    expect(first.outputs[0]!.data).toEqual(fp32("x", [1, 2, 3, 4]).data);
    expect(first.outputs[0]!.shape).toEqual([4]);
    first.outputs[0]!.shape.push(7); // a hit's tensors are its own objects
    expect(cache.get("k")!.outputs[0]!.shape).toEqual([4]);
  });

  it("counts output bytes plus overhead against the budget", () => {
    const cache = new ResponseCache(10_000);
    const key = "k".repeat(KEY_LENGTH);
    cache.set(key, response(1000));
    expect(cache.bytes).toBe(cost(1000));
    expect(cache.bytes).toBeGreaterThan(1000 + ENTRY_OVERHEAD_BYTES);
    cache.set(key, response(10)); // replacing an entry re-counts it
    expect(cache.bytes).toBe(cost(10));
    expect(cache.size).toBe(1);
    expect(cache.delete(key)).toBe(true);
    expect(cache.bytes).toBe(0);
    expect(cache.stats()).toEqual({ bytes: 0, entries: 0, capacityBytes: 10_000 });
  });

  it("evicts least recently used entries until a new one fits", () => {
    const key = (n: number): string => String(n).padStart(KEY_LENGTH, "0");
    const cache = new ResponseCache(3 * cost(100));
    cache.set(key(1), response(100, 1));
    cache.set(key(2), response(100, 2));
    cache.set(key(3), response(100, 3));
    expect(cache.size).toBe(3);
    expect(cache.bytes).toBe(3 * cost(100));

    expect(cache.get(key(1))).toBeDefined(); // 1 is now the most recently used; 2 the least
    expect(cache.keys()).toEqual([key(2), key(3), key(1)]);
    cache.set(key(4), response(100, 4));
    expect(cache.has(key(2))).toBe(false);
    expect(cache.keys()).toEqual([key(3), key(1), key(4)]);

    // one entry twice the size evicts the two least recently used
    cache.set(key(5), response(100 + cost(100), 5));
    expect(cache.keys()).toEqual([key(4), key(5)]);
    expect(cache.bytes).toBeLessThanOrEqual(cache.capacityBytes);
    expect(cache.get(key(5))!.outputs[0]!.data[0]).toBe(5);
    expect(cache.get(key(4))!.outputs[0]!.data[0]).toBe(4);
  });

  it("does not cache an entry larger than the whole budget, and evicts nothing for it", () => {
    const cache = new ResponseCache(cost(1000));
    cache.set("a".repeat(KEY_LENGTH), response(10));
    expect(cache.set("b".repeat(KEY_LENGTH), response(1001))).toBe(false);
    expect(cache.keys()).toEqual(["a".repeat(KEY_LENGTH)]);
    // exactly the budget fits (after evicting the rest)
    expect(cache.set("c".repeat(KEY_LENGTH), response(1000))).toBe(true);
    expect(cache.keys()).toEqual(["c".repeat(KEY_LENGTH)]);
    expect(cache.bytes).toBe(cache.capacityBytes);
  });

  it("caches outputs with no bytes, and rejects a budget that is not a positive integer", () => {
    const cache = new ResponseCache(1000);
    expect(cache.set("k", { outputs: [fp32("OUTPUT0", [], [0, 4])] })).toBe(true);
    expect(cache.get("k")!.outputs[0]!.shape).toEqual([0, 4]);
    expect(() => new ResponseCache(0)).toThrow(RangeError);
    expect(() => new ResponseCache(1.5)).toThrow(RangeError);
  });
});

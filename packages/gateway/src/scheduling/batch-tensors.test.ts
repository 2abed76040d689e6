import { describe, expect, it } from "vitest";
import { decodeBytesElements, encodeBytesElements, type Tensor } from "@operon/protocol/tensor";
import { batchShapeKey, joinBatch, splitBatch } from "./batch-tensors.js";

function fp32(name: string, shape: number[], values: number[]): Tensor {
  return { name, datatype: "FP32", shape, data: Buffer.from(new Float32Array(values).buffer) };
}

describe("batch tensors", () => {
  it("keys requests by their non-batch shapes only", () => {
    expect(batchShapeKey([fp32("x", [1, 2], [1, 2])])).toBe(batchShapeKey([fp32("x", [3, 2], [1, 2, 3, 4, 5, 6])]));
    expect(batchShapeKey([fp32("x", [1, 2], [1, 2])])).not.toBe(batchShapeKey([fp32("x", [1, 3], [1, 2, 3])]));
  });

  it("joins along the batch dimension and splits back to the same requests", () => {
    const a = [fp32("x", [1, 2], [1, 2])];
    const b = [fp32("x", [2, 2], [3, 4, 5, 6])];
    const [joined] = joinBatch([a, b], [1, 2]);
    expect(joined!.shape).toEqual([3, 2]);
    expect([
      ...new Float32Array(
        joined!.data.buffer.slice(joined!.data.byteOffset, joined!.data.byteOffset + joined!.data.length),
      ),
    ]).toEqual([1, 2, 3, 4, 5, 6]);
    const [first, second] = splitBatch([joined!], [1, 2]);
    expect(first![0]!.shape).toEqual([1, 2]);
    expect(first![0]!.data.equals(a[0]!.data)).toBe(true);
    expect(second![0]!.shape).toEqual([2, 2]);
    expect(second![0]!.data.equals(b[0]!.data)).toBe(true);
  });

  it("splits BYTES outputs by walking their elements", () => {
    const output: Tensor = {
      name: "s",
      datatype: "BYTES",
      shape: [3, 2],
      data: encodeBytesElements(["a", "bb", "", "cccc", "d", "ee"]),
    };
    const [one, two] = splitBatch([output], [1, 2]);
    expect(decodeBytesElements(one![0]!.data).map(String)).toEqual(["a", "bb"]);
    expect(decodeBytesElements(two![0]!.data).map(String)).toEqual(["", "cccc", "d", "ee"]);
    expect(two![0]!.shape).toEqual([2, 2]);
  });

  it("refuses outputs whose batch dimension does not match the batch", () => {
    expect(() => splitBatch([fp32("y", [2, 1], [1, 2])], [1, 2])).toThrow(/batch dimension 2 but the batch holds 3/);
  });
});

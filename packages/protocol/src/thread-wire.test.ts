import { describe, expect, it } from "vitest";
import type { Tensor } from "./tensor.js";
import { allocateHandOff, packTensors, packTensorsReusing, unpackTensors } from "./thread-wire.js";

const tensor = (name: string, bytes: number[]): Tensor => ({
  name,
  datatype: "UINT8",
  shape: [bytes.length],
  data: Buffer.from(bytes),
});
const bytesOf = (tensors: Tensor[]) => tensors.map((t) => [t.name, [...t.data]]);

describe("packTensors / unpackTensors", () => {
  it("round-trips tensors through one buffer at 8-byte-aligned offsets", () => {
    const packed = packTensors([tensor("a", [1, 2, 3]), tensor("b", [4, 5])]);
    expect(packed.tensors.map((t) => t.byteOffset)).toEqual([0, 8]);
    expect(bytesOf(unpackTensors(packed.buffer, packed.tensors))).toEqual([
      ["a", [1, 2, 3]],
      ["b", [4, 5]],
    ]);
  });
});

describe("packTensorsReusing", () => {
  it("sends outputs that are views of the received buffer back in it, without a copy", () => {
    const request = packTensors([tensor("in0", [1, 2, 3]), tensor("in1", [9, 8])]);
    const inputs = unpackTensors(request.buffer, request.tensors);
    const echoed = [
      { ...inputs[1]!, name: "out0" },
      { ...inputs[0]!, name: "out1" },
    ];
    const result = packTensorsReusing(request.buffer, echoed);
    expect(result.buffer).toBe(request.buffer);
    expect(result.tensors.map((t) => t.byteOffset)).toEqual([8, 0]);
    expect(bytesOf(unpackTensors(result.buffer, result.tensors))).toEqual([
      ["out0", [9, 8]],
      ["out1", [1, 2, 3]],
    ]);
  });

  it("copies outputs that fit into the received buffer when none aliases it", () => {
    const request = packTensors([tensor("in", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17])]);
    const result = packTensorsReusing(request.buffer, [tensor("x", [42, 43]), tensor("y", [7])]);
    expect(result.buffer).toBe(request.buffer);
    expect(bytesOf(unpackTensors(result.buffer, result.tensors))).toEqual([
      ["x", [42, 43]],
      ["y", [7]],
    ]);
  });

  it("takes a fresh buffer for outputs larger than the received one", () => {
    const request = packTensors([tensor("in", [1])]);
    const result = packTensorsReusing(request.buffer, [
      tensor(
        "big",
        Array.from({ length: 64 }, (_, i) => i),
      ),
    ]);
    expect(result.buffer).not.toBe(request.buffer);
    expect([...unpackTensors(result.buffer, result.tensors)[0]!.data]).toEqual(Array.from({ length: 64 }, (_, i) => i));
  });

  it("takes a fresh buffer when only some outputs alias the received one (a copy into it could overwrite them)", () => {
    const request = packTensors([tensor("in", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])]);
    const input = unpackTensors(request.buffer, request.tensors)[0]!;
    const result = packTensorsReusing(request.buffer, [tensor("new", [99, 98, 97]), { ...input, name: "same" }]);
    expect(result.buffer).not.toBe(request.buffer);
    expect(bytesOf(unpackTensors(result.buffer, result.tensors))).toEqual([
      ["new", [99, 98, 97]],
      ["same", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]],
    ]);
  });

  it("takes a fresh buffer for views at unaligned offsets", () => {
    const request = packTensors([tensor("in", [1, 2, 3, 4])]);
    const input = unpackTensors(request.buffer, request.tensors)[0]!;
    const result = packTensorsReusing(request.buffer, [
      { ...input, name: "tail", shape: [3], data: input.data.subarray(1) },
    ]);
    expect(result.buffer).not.toBe(request.buffer);
    expect([...unpackTensors(result.buffer, result.tensors)[0]!.data]).toEqual([2, 3, 4]);
  });
});

describe("hand-off buffers", () => {
  it("packTensors sends tensors that lie in one hand-off buffer as they are, once", () => {
    const joined = allocateHandOff(24);
    joined.set([1, 2, 3], 0);
    joined.set([4, 5], 8);
    const tensors = [
      { name: "a", datatype: "UINT8" as const, shape: [3], data: joined.subarray(0, 3) },
      { name: "b", datatype: "UINT8" as const, shape: [2], data: joined.subarray(8, 10) },
    ];
    const first = packTensors(tensors);
    expect(first.buffer).toBe(joined.buffer);
    expect(bytesOf(unpackTensors(first.buffer, first.tensors))).toEqual([
      ["a", [1, 2, 3]],
      ["b", [4, 5]],
    ]);
    // A second pack of the same tensors copies: the hand-off is spent.
    expect(packTensors(tensors).buffer).not.toBe(joined.buffer);
  });

  it("copies tensors of a plain buffer, or of a hand-off buffer at unaligned offsets", () => {
    const plain = Buffer.allocUnsafeSlow(8);
    expect(packTensors([{ name: "a", datatype: "UINT8", shape: [8], data: plain }]).buffer).not.toBe(plain.buffer);
    const joined = allocateHandOff(16);
    expect(packTensors([{ name: "a", datatype: "UINT8", shape: [3], data: joined.subarray(3, 6) }]).buffer).not.toBe(
      joined.buffer,
    );
  });
});

import { describe, expect, it } from "vitest";
import type { Tensor } from "./tensor.js";
import { TensorNames, allocateHandOff, packTensors, packTensorsReusing, unpackTensors } from "./thread-wire.js";

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

describe("TensorNames (the wire's numbers-only TensorLayout)", () => {
  const names = new TensorNames(["INPUT0", "INPUT1", "MASK"]);
  const fp32 = (name: string, shape: number[], values: number[]): Tensor => ({
    name,
    datatype: "FP32",
    shape,
    data: Buffer.from(new Float32Array(values).buffer),
  });

  it("round-trips tensors of declared names as numbers only, names and datatypes by index", () => {
    const packed = packTensors([
      fp32("INPUT1", [1, 2], [1.5, -2]),
      { name: "MASK", datatype: "BOOL", shape: [3], data: Buffer.from([1, 0, 1]) },
      fp32("INPUT0", [0, 4], []),
    ]);
    const layout = names.layoutOf(packed.tensors)!;
    expect(layout.every((entry) => typeof entry === "number")).toBe(true);
    const back = names.unpack(packed.buffer, layout);
    expect(back.map((t) => [t.name, t.datatype, t.shape, [...t.data]])).toEqual([
      ["INPUT1", "FP32", [1, 2], [...Buffer.from(new Float32Array([1.5, -2]).buffer)]],
      ["MASK", "BOOL", [3], [1, 0, 1]],
      ["INPUT0", "FP32", [0, 4], []],
    ]);
    expect(back[0]!.data.buffer).toBe(packed.buffer);
  });

  it("has no layout for a tensor outside the table: the message then carries the objects, which unpack too", () => {
    const packed = packTensors([fp32("INPUT0", [1], [1]), fp32("EXTRA", [1], [2])]);
    expect(names.layoutOf(packed.tensors)).toBeUndefined();
    expect(names.unpack(packed.buffer, packed.tensors).map((t) => t.name)).toEqual(["INPUT0", "EXTRA"]);
  });

  it("selects outputs by index when all are declared, by name otherwise", () => {
    expect(names.indexesOf(["MASK", "INPUT0"])).toEqual([2, 0]);
    expect(names.namesOf([2, 0])).toEqual(["MASK", "INPUT0"]);
    expect(names.indexesOf(["MASK", "nope"])).toBeUndefined();
    expect(names.namesOf(["nope"])).toEqual(["nope"]);
  });

  it("refuses a layout that names an index outside the table or an unknown datatype", () => {
    const buffer = new ArrayBuffer(8);
    expect(() => names.unpack(buffer, [1, 7, 10, 1, 1, 0, 4])).toThrow(/name index 7 is outside the table of 3/);
    expect(() => names.unpack(buffer, [1, 0, 99, 1, 1, 0, 4])).toThrow(/datatype index 99 is not a datatype/);
  });
});

import { describe, expect, it } from "vitest";
import type { DataType } from "./datatypes.js";
import { OperonError } from "./errors.js";
import {
  contentsFieldOf,
  contentsFromTensorData,
  type InferTensorContents,
  tensorDataFromContents,
} from "./grpc-tensor-contents.js";
import { decodeBytesElements, encodeBytesElements } from "./tensor.js";

function fromContents(datatype: DataType, shape: number[], contents: InferTensorContents): Buffer {
  return tensorDataFromContents({ name: "x", datatype, shape }, contents);
}

function expectInvalid(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    expect((error as OperonError).kind).toBe("INVALID_ARG");
    expect((error as OperonError).message).toMatch(pattern);
    return;
  }
  throw new Error("expected an INVALID_ARG error");
}

describe("tensorDataFromContents", () => {
  it("encodes FP32 and FP64 little-endian", () => {
    const fp32 = fromContents("FP32", [2], { fp32_contents: [1.5, -2] });
    expect(fp32.readFloatLE(0)).toBe(1.5);
    expect(fp32.readFloatLE(4)).toBe(-2);
    const fp64 = fromContents("FP64", [1], { fp64_contents: [Math.PI] });
    expect(fp64.readDoubleLE(0)).toBe(Math.PI);
  });

  it("encodes INT8/16/32 from int_contents and UINT8/16/32 from uint_contents", () => {
    expect([...fromContents("INT8", [3], { int_contents: [-128, 0, 127] })]).toEqual([0x80, 0, 0x7f]);
    expect(fromContents("INT16", [1], { int_contents: [-2] }).readInt16LE(0)).toBe(-2);
    expect(fromContents("INT32", [1], { int_contents: [-70000] }).readInt32LE(0)).toBe(-70000);
    expect([...fromContents("UINT8", [2], { uint_contents: [0, 255] })]).toEqual([0, 255]);
    expect(fromContents("UINT16", [1], { uint_contents: [65535] }).readUInt16LE(0)).toBe(65535);
    expect(fromContents("UINT32", [1], { uint_contents: [4294967295] }).readUInt32LE(0)).toBe(4294967295);
  });

  it("encodes INT64 and UINT64 from strings, numbers and bigints without precision loss", () => {
    const i64 = fromContents("INT64", [3], { int64_contents: ["-9223372036854775808", 5, 9007199254740993n] });
    expect(i64.readBigInt64LE(0)).toBe(-9223372036854775808n);
    expect(i64.readBigInt64LE(8)).toBe(5n);
    expect(i64.readBigInt64LE(16)).toBe(9007199254740993n);
    const u64 = fromContents("UINT64", [1], { uint64_contents: ["18446744073709551615"] });
    expect(u64.readBigUInt64LE(0)).toBe(18446744073709551615n);
  });

  it("encodes BOOL as one byte per element", () => {
    expect([...fromContents("BOOL", [3], { bool_contents: [true, false, true] })]).toEqual([1, 0, 1]);
  });

  it("encodes BYTES into Triton's length-prefixed layout", () => {
    const data = fromContents("BYTES", [2], { bytes_contents: [Buffer.from("hi"), new Uint8Array([0, 255])] });
    expect(data).toEqual(encodeBytesElements([Buffer.from("hi"), Buffer.from([0, 255])]));
  });

  it("accepts empty tensors and ignores empty fields of other types", () => {
    expect(fromContents("FP32", [0, 3], { fp32_contents: [], int_contents: [] }).length).toBe(0);
  });

  it("rejects an element count that does not match the shape", () => {
    expectInvalid(
      () => fromContents("FP32", [2, 2], { fp32_contents: [1, 2, 3] }),
      /input 'x'.*expected 4 elements in fp32_contents.*got 3/,
    );
  });

  it("rejects FP16 and BF16 as typed contents", () => {
    expectInvalid(() => fromContents("FP16", [1], {}), /input 'x'.*FP16.*raw_input_contents/);
    expectInvalid(() => fromContents("BF16", [1], {}), /BF16.*raw_input_contents/);
  });

  it("rejects values in the wrong field", () => {
    expectInvalid(
      () => fromContents("FP32", [1], { fp32_contents: [1], int_contents: [1] }),
      /must use fp32_contents.*int_contents/,
    );
  });

  it("rejects out-of-range and non-integer values", () => {
    expectInvalid(() => fromContents("UINT8", [1], { uint_contents: [256] }), /out of range for UINT8/);
    expectInvalid(() => fromContents("INT8", [1], { int_contents: [1.5] }), /out of range for INT8/);
    expectInvalid(
      () => fromContents("INT64", [1], { int64_contents: ["9223372036854775808"] }),
      /out of range for INT64/,
    );
    expectInvalid(() => fromContents("UINT64", [1], { uint64_contents: ["-1"] }), /out of range for UINT64/);
    expectInvalid(() => fromContents("INT64", [1], { int64_contents: ["abc"] }), /expected an integer/);
  });
});

describe("contentsFromTensorData", () => {
  const cases: Array<[DataType, InferTensorContents]> = [
    ["BOOL", { bool_contents: [true, false] }],
    ["INT8", { int_contents: [-1, 2] }],
    ["INT16", { int_contents: [-300, 300] }],
    ["INT32", { int_contents: [-1, 2147483647] }],
    ["UINT8", { uint_contents: [0, 255] }],
    ["UINT16", { uint_contents: [1, 65535] }],
    ["UINT32", { uint_contents: [1, 4294967295] }],
    ["INT64", { int64_contents: ["-9223372036854775808", "42"] }],
    ["UINT64", { uint64_contents: ["18446744073709551615", "0"] }],
    ["FP32", { fp32_contents: [0.5, -1] }],
    ["FP64", { fp64_contents: [Math.E, 1e300] }],
  ];

  it.each(cases)("round-trips %s", (datatype, contents) => {
    const data = fromContents(datatype, [2], contents);
    expect(contentsFromTensorData({ name: "x", datatype, shape: [2], data })).toEqual(contents);
  });

  it("round-trips BYTES", () => {
    const data = encodeBytesElements(["a", "", "xyz"]);
    const contents = contentsFromTensorData({ name: "x", datatype: "BYTES", shape: [3], data });
    expect(contents.bytes_contents?.map((b) => Buffer.from(b).toString())).toEqual(["a", "", "xyz"]);
    expect(decodeBytesElements(fromContents("BYTES", [3], contents))).toHaveLength(3);
  });

  it("rejects FP16", () => {
    expect(() => contentsFromTensorData({ name: "h", datatype: "FP16", shape: [1], data: Buffer.alloc(2) })).toThrow(
      /tensor 'h'.*FP16/,
    );
  });

  it("names the field for each datatype", () => {
    expect(contentsFieldOf("INT16")).toBe("int_contents");
    expect(contentsFieldOf("UINT64")).toBe("uint64_contents");
    expect(contentsFieldOf("BF16")).toBeUndefined();
  });
});

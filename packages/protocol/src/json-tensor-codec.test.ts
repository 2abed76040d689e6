import { describe, expect, it } from "vitest";
import { type DataType, elementByteSize } from "./datatypes.js";
import { OperonError } from "./errors.js";
import { bufferToJsonData, bufferToJsonText, jsonDataToBuffer } from "./json-tensor-codec.js";
import { encodeBytesElements } from "./tensor.js";

function roundTrip(datatype: DataType, shape: number[], data: unknown[]): unknown[] {
  return bufferToJsonData({ name: "x", datatype, shape, data: jsonDataToBuffer("x", datatype, shape, data) });
}

function errorOf(fn: () => unknown): OperonError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(OperonError);
    return error as OperonError;
  }
  throw new Error("expected an OperonError");
}

describe("jsonDataToBuffer", () => {
  it("writes little-endian row-major bytes for every JSON-capable datatype", () => {
    expect(jsonDataToBuffer("x", "FP32", [2], [1.5, -2])).toEqual(Buffer.from(new Float32Array([1.5, -2]).buffer));
    expect(jsonDataToBuffer("x", "INT16", [2], [-2, 300])).toEqual(Buffer.from([0xfe, 0xff, 0x2c, 0x01]));
    expect(jsonDataToBuffer("x", "BOOL", [3], [true, false, true])).toEqual(Buffer.from([1, 0, 1]));
    expect(jsonDataToBuffer("x", "BYTES", [2], ["hé", ""])).toEqual(encodeBytesElements(["hé", ""]));
    expect(jsonDataToBuffer("x", "UINT64", [1], ["18446744073709551615"])).toEqual(Buffer.alloc(8, 0xff));
  });

  it.each<[DataType, unknown[]]>([
    ["BOOL", [true, false]],
    ["UINT8", [0, 255]],
    ["UINT16", [0, 65535]],
    ["UINT32", [0, 4294967295]],
    ["INT8", [-128, 127]],
    ["INT16", [-32768, 32767]],
    ["INT32", [-2147483648, 2147483647]],
    ["INT64", [-9007199254740991, 9007199254740991]],
    ["UINT64", [0, 9007199254740991]],
    ["FP32", [0.5, -1e10]],
    ["FP64", [Math.PI, -0.1]],
    ["BYTES", ["a", "ünïcode"]],
  ])("round-trips %s at the edges of its range", (datatype, data) => {
    expect(roundTrip(datatype, [2], data)).toEqual(data);
  });

  it("accepts nested data in row-major order, and scalars and empty tensors", () => {
    expect(
      roundTrip(
        "INT32",
        [2, 2],
        [
          [1, 2],
          [3, 4],
        ],
      ),
    ).toEqual([1, 2, 3, 4]);
    expect(
      roundTrip(
        "INT32",
        [1, 2, 2],
        [
          [
            [1, 2],
            [3, 4],
          ],
        ],
      ),
    ).toEqual([1, 2, 3, 4]);
    expect(roundTrip("FP64", [], [7])).toEqual([7]);
    expect(jsonDataToBuffer("x", "FP32", [0, 3], [])).toHaveLength(0);
  });

  it("survives absurd nesting without recursion", () => {
    let nested: unknown[] = [1];
    for (let i = 0; i < 100_000; i++) nested = [nested];
    expect(roundTrip("INT8", [1], nested)).toEqual([1]);
  });

  it("rejects FP32 values that overflow to infinity", () => {
    expect(() => jsonDataToBuffer("x", "FP32", [2], [1, 1e39])).toThrow(
      /input 'x'.*element 1 \(1e\+39\) is outside the FP32 range/,
    );
    expect(jsonDataToBuffer("x", "FP64", [1], [1e39]).readDoubleLE(0)).toBe(1e39);
  });

  it("names the tensor, shape and counts when the element count is wrong", () => {
    expect(errorOf(() => jsonDataToBuffer("x", "FP32", [2, 4], [1, 2, 3, 4, 5, 6, 7])).message).toBe(
      "input 'x': expected 8 elements for shape [2,4], got 7",
    );
    expect(errorOf(() => jsonDataToBuffer("x", "FP32", [2], [[1], [2], [3]])).kind).toBe("INVALID_ARG");
  });

  it("rejects data that is not an array", () => {
    expect(errorOf(() => jsonDataToBuffer("x", "FP32", [1], 1)).message).toBe(
      "input 'x': 'data' must be an array, got 1",
    );
    expect(errorOf(() => jsonDataToBuffer("x", "FP32", [1], { a: 1 })).message).toContain("got an object");
  });

  it.each<[DataType, unknown, string]>([
    ["BOOL", 1, "element 1 must be a boolean for BOOL, got 1"],
    ["INT8", 128, "element 1 must be an integer in [-128, 127] for INT8, got 128"],
    ["UINT8", -1, "element 1 must be an integer in [0, 255] for UINT8, got -1"],
    ["UINT16", 65536, "in [0, 65535]"],
    ["INT32", 1.5, "element 1 must be an integer in [-2147483648, 2147483647] for INT32, got 1.5"],
    ["UINT32", "7", 'got "7"'],
    ["INT64", 2 ** 60, "is past 2^53 and may already have lost precision in JSON; send it as a decimal string"],
    ["INT64", 0.5, "element 1 (0.5) must be an integer for INT64"],
    [
      "INT64",
      "9223372036854775808",
      "element 1 (9223372036854775808) is out of range [-9223372036854775808, 9223372036854775807] for INT64",
    ],
    ["UINT64", "-1", "is out of range [0, 18446744073709551615] for UINT64"],
    ["UINT64", "12abc", "element 1 must be an integer or a decimal string for UINT64"],
    ["FP32", "1.0", 'element 1 must be a number for FP32, got "1.0"'],
    ["FP64", null, "element 1 must be a number for FP64, got null"],
    ["BYTES", 5, "element 1 must be a string for BYTES, got 5"],
  ])("rejects a bad %s element (%j)", (datatype, bad, message) => {
    const good = datatype === "BOOL" ? true : datatype === "BYTES" ? "ok" : 0;
    const error = errorOf(() => jsonDataToBuffer("x", datatype, [2], [good, bad]));
    expect(error.kind).toBe("INVALID_ARG");
    expect(error.message).toContain("input 'x': ");
    expect(error.message).toContain(message);
  });

  it("takes exact 64-bit integers as decimal strings or bigints", () => {
    const data = ["-9223372036854775808", 9223372036854775807n, 12];
    const buffer = jsonDataToBuffer("x", "INT64", [3], data);
    expect(buffer.readBigInt64LE(0)).toBe(-(2n ** 63n));
    expect(buffer.readBigInt64LE(8)).toBe(2n ** 63n - 1n);
    expect(buffer.readBigInt64LE(16)).toBe(12n);
  });

  it.each<DataType>(["FP16", "BF16"])("refuses %s in JSON and says to send binary data", (datatype) => {
    const error = errorOf(() => jsonDataToBuffer("half", datatype, [1], [1]));
    expect(error.message).toBe(
      `input 'half': ${datatype} data cannot be sent as JSON; send it as binary data (binary_data_size parameter)`,
    );
  });
});

describe("bufferToJsonData", () => {
  it("returns 64-bit integers as numbers when safe and bigints otherwise", () => {
    const data = Buffer.alloc(16);
    data.writeBigUInt64LE(42n, 0);
    data.writeBigUInt64LE(2n ** 64n - 1n, 8);
    const tensor = { name: "u", datatype: "UINT64" as const, shape: [2], data };
    expect(bufferToJsonData(tensor)).toEqual([42, 2n ** 64n - 1n]);
    expect(bufferToJsonText(tensor)).toBe("[42,18446744073709551615]");
  });

  it("reads misaligned slices (as cut from a request body)", () => {
    const body = Buffer.alloc(1 + 8);
    body.writeFloatLE(1.25, 1);
    body.writeFloatLE(-3, 5);
    expect(bufferToJsonData({ name: "f", datatype: "FP32", shape: [2], data: body.subarray(1) })).toEqual([1.25, -3]);
    const int64 = Buffer.alloc(3 + 8);
    int64.writeBigInt64LE(-5n, 3);
    expect(bufferToJsonData({ name: "i", datatype: "INT64", shape: [1], data: int64.subarray(3) })).toEqual([-5]);
  });

  it("decodes FP16 and BF16 exactly", () => {
    const half = Buffer.from(new Uint16Array([0x3c00, 0xc000, 0x0001, 0x7c00, 0xfc00, 0x3555]).buffer);
    expect(bufferToJsonData({ name: "h", datatype: "FP16", shape: [6], data: half })).toEqual([
      1,
      -2,
      2 ** -24,
      Infinity,
      -Infinity,
      0.333251953125,
    ]);
    const nan = Buffer.from(new Uint16Array([0x7e00]).buffer);
    expect(bufferToJsonData({ name: "h", datatype: "FP16", shape: [1], data: nan })[0]).toBeNaN();
    const bf16 = Buffer.from(new Uint16Array([0x3f80, 0xc040]).buffer);
    expect(bufferToJsonData({ name: "b", datatype: "BF16", shape: [2], data: bf16 })).toEqual([1, -3]);
  });

  it("decodes BOOL as booleans and BYTES as UTF-8 strings", () => {
    expect(bufferToJsonData({ name: "b", datatype: "BOOL", shape: [3], data: Buffer.from([0, 1, 2]) })).toEqual([
      false,
      true,
      true,
    ]);
    expect(
      bufferToJsonData({ name: "s", datatype: "BYTES", shape: [2], data: encodeBytesElements(["é", "z"]) }),
    ).toEqual(["é", "z"]);
  });

  it("writes the same JSON text as JSON.stringify of the decoded values, for every numeric datatype", () => {
    const floats = [0, -0, 1.5, -3.25, 1e-45, 3.4e38, 0.1, 1 / 3, 123456789, -(2 ** -20)];
    const cases: Array<[DataType, ArrayBufferView]> = [
      ["UINT8", new Uint8Array([0, 1, 255])],
      ["INT8", new Int8Array([-128, 0, 127])],
      ["INT16", new Int16Array([-32768, 7, 32767])],
      ["UINT16", new Uint16Array([0, 65535])],
      ["INT32", new Int32Array([-(2 ** 31), 0, 2 ** 31 - 1])],
      ["UINT32", new Uint32Array([0, 2 ** 32 - 1])],
      ["FP32", new Float32Array(floats)],
      ["FP64", new Float64Array([...floats, Number.MAX_VALUE, Number.MIN_VALUE, 5e-324])],
      ["INT64", new BigInt64Array([-(2n ** 63n), -1n, 0n, 2n ** 53n - 1n])],
    ];
    for (const [datatype, values] of cases) {
      // At an odd offset too, as a slice of a request body arrives.
      const bytes = Buffer.alloc(values.byteLength + 1);
      Buffer.from(values.buffer, values.byteOffset, values.byteLength).copy(bytes, 1);
      for (const data of [Buffer.from(bytes.subarray(1)), bytes.subarray(1)]) {
        const tensor = { name: "t", datatype, shape: [data.length / elementByteSize(datatype)!], data };
        const decoded = bufferToJsonData(tensor);
        expect(bufferToJsonText(tensor), datatype).toBe(
          datatype === "INT64" ? `[${decoded.join(",")}]` : JSON.stringify(decoded),
        );
      }
    }
  });

  it("checks the element count on the JSON text path too", () => {
    expect(
      errorOf(() => bufferToJsonText({ name: "o", datatype: "INT32", shape: [3], data: Buffer.alloc(8) })).message,
    ).toBe("tensor 'o': expected 3 elements for shape [3], got 2");
  });

  it("writes NaN as null in JSON text, which has no NaN", () => {
    expect(
      bufferToJsonText({
        name: "f",
        datatype: "FP32",
        shape: [2],
        data: Buffer.from(new Float32Array([NaN, 1]).buffer),
      }),
    ).toBe("[null,1]");
  });

  it("rejects data whose size disagrees with the shape or datatype", () => {
    expect(
      errorOf(() => bufferToJsonData({ name: "o", datatype: "FP32", shape: [3], data: Buffer.alloc(8) })).message,
    ).toBe("tensor 'o': expected 3 elements for shape [3], got 2");
    expect(
      errorOf(() => bufferToJsonData({ name: "o", datatype: "INT32", shape: [1], data: Buffer.alloc(5) })).message,
    ).toContain("5 bytes is not a whole number of 4-byte INT32 elements");
  });
});

import { describe, expect, it } from "vitest";
import { formatShape, fullShape, shapesCompatible, tensorMismatch } from "./tensor-compatibility.js";

describe("fullShape", () => {
  it("puts the batch dimension first only when the owner batches", () => {
    expect(fullShape(8, [16])).toEqual([-1, 16]);
    expect(fullShape(0, [16])).toEqual([16]);
  });
});

describe("shapesCompatible", () => {
  it("matches equal dimensions and -1 on either side, never a different rank", () => {
    expect(shapesCompatible([-1, 16], [4, 16])).toBe(true);
    expect(shapesCompatible([2, -1], [2, 7])).toBe(true);
    expect(shapesCompatible([-1, 16], [-1, 8])).toBe(false);
    expect(shapesCompatible([-1, 16], [16])).toBe(false);
  });
});

describe("tensorMismatch", () => {
  it("names the datatype first, then the shape, producer before consumer", () => {
    expect(tensorMismatch({ datatype: "INT32", shape: [-1, 8] }, { datatype: "FP32", shape: [-1, 16] })).toEqual({
      what: "datatype",
      given: "INT32",
      expected: "FP32",
    });
    expect(tensorMismatch({ datatype: "FP32", shape: [-1, 8] }, { datatype: "FP32", shape: [-1, 16] })).toEqual({
      what: "shape",
      given: "[-1,8]",
      expected: "[-1,16]",
    });
    expect(tensorMismatch({ datatype: "FP32", shape: [-1, 16] }, { datatype: "FP32", shape: [3, -1] })).toBeUndefined();
  });

  it("writes shapes as the gateway's messages do", () => {
    expect(formatShape([-1, 16])).toBe("[-1,16]");
  });
});

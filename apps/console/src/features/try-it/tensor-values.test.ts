import { describe, expect, it } from "vitest";
import {
  bytesToBase64,
  concreteShape,
  defaultValues,
  elementCount,
  fillValues,
  parseShape,
  parseValues,
} from "./tensor-values";

describe("try-it tensor values", () => {
  it("turns the model's dynamic sizes into one request of batch 1", () => {
    expect(concreteShape([-1, 16])).toEqual([1, 16]);
    expect(elementCount(concreteShape([-1, 3, -1]))).toBe(3);
    expect(elementCount([])).toBe(1);
  });

  it("starts from values of the datatype's kind", () => {
    expect(defaultValues("FP32", 3)).toEqual([0, 1, 2]);
    expect(defaultValues("BOOL", 2)).toEqual([false, true]);
    expect(defaultValues("BYTES", 1)).toEqual(["text 0"]);
    expect(defaultValues("INT8", 130).at(-1)).toBe(1);
  });

  it("checks the values against the shape and the datatype", () => {
    expect(parseValues("[1, 2.5]", "FP32", 2)).toEqual({ ok: true, value: [1, 2.5] });
    expect(parseValues("[1, 2.5]", "INT32", 2)).toEqual({ ok: false, message: "INT32 takes whole numbers only" });
    expect(parseValues("[1, 2, 3]", "FP32", 16)).toEqual({ ok: false, message: "the shape holds 16 values; 3 given" });
    expect(parseValues("{}", "FP32", 1).ok).toBe(false);
    expect(parseValues("[", "FP32", 1).ok).toBe(false);
    expect(parseValues('["a"]', "BYTES", 1).ok).toBe(true);
  });

  it("reads a shape of sizes ≥ 0", () => {
    expect(parseShape("1, 16")).toEqual({ ok: true, value: [1, 16] });
    expect(parseShape("1, -1").ok).toBe(false);
  });
});

describe("fillValues", () => {
  const fixed = () => 0.25;
  it("fills zeros, random values in the type's range, or the ramp", () => {
    expect(fillValues("FP32", 3, "zeros")).toEqual([0, 0, 0]);
    expect(fillValues("FP32", 2, "random", fixed)).toEqual([0.25, 0.25]);
    expect(fillValues("UINT8", 2, "random", fixed)).toEqual([64, 64]);
    expect(fillValues("INT64", 3, "ramp")).toEqual([0, 1, 2]);
    expect(fillValues("BOOL", 2, "random", fixed)).toEqual([true, true]);
  });
});

describe("bytesToBase64", () => {
  it("encodes bytes that are not text, and large files without overflowing the stack", () => {
    expect(bytesToBase64(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0xff]))).toBe("iVBOR/8=");
    const large = new Uint8Array(300_000).fill(7);
    expect(atob(bytesToBase64(large)).length).toBe(300_000);
  });
});

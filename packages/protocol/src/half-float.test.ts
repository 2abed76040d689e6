import { describe, expect, it } from "vitest";
import {
  bfloat16BitsToNumber,
  decodeHalfFloats,
  encodeHalfFloats,
  float16BitsToNumber,
  numberToBfloat16Bits,
  numberToFloat16Bits,
} from "./half-float.js";

const SMALLEST_SUBNORMAL = 2 ** -24;
const SMALLEST_NORMAL = 2 ** -14;

describe("FP16", () => {
  it.each([
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3c00],
    [-2, 0xc000],
    [0.5, 0x3800],
    [65504, 0x7bff],
    [SMALLEST_NORMAL, 0x0400],
    [SMALLEST_SUBNORMAL, 0x0001],
    [1023 * SMALLEST_SUBNORMAL, 0x03ff],
    [Infinity, 0x7c00],
    [-Infinity, 0xfc00],
  ])("encodes %s exactly (bits %i) and back", (value, bits) => {
    expect(numberToFloat16Bits(value)).toBe(bits);
    expect(Object.is(float16BitsToNumber(bits), value)).toBe(true);
  });

  it("keeps NaN a quiet NaN, both ways", () => {
    expect(numberToFloat16Bits(NaN) & 0x7e00).toBe(0x7e00);
    expect(float16BitsToNumber(0x7c01)).toBeNaN();
    expect(float16BitsToNumber(0xfe00)).toBeNaN();
  });

  it("rounds to nearest, ties to even", () => {
    const ulp = 2 ** -10; // between 1 and 2
    expect(numberToFloat16Bits(1 + ulp / 2)).toBe(0x3c00); // tie, 0x3c00 is even
    expect(numberToFloat16Bits(1 + ulp + ulp / 2)).toBe(0x3c02); // tie, 0x3c01 is odd: up
    expect(numberToFloat16Bits(1 + ulp / 2 + 2 ** -20)).toBe(0x3c01); // just past the tie
    expect(numberToFloat16Bits(1 + ulp / 2 - 2 ** -20)).toBe(0x3c00);
    expect(numberToFloat16Bits(-(1 + ulp + ulp / 2))).toBe(0xbc02);
  });

  it("rounds into and out of the subnormals and the range", () => {
    expect(numberToFloat16Bits(SMALLEST_SUBNORMAL / 2)).toBe(0x0000); // tie to even: 0
    expect(numberToFloat16Bits(SMALLEST_SUBNORMAL * 0.75)).toBe(0x0001);
    expect(numberToFloat16Bits(SMALLEST_SUBNORMAL * 1.5)).toBe(0x0002); // tie, 1 is odd: up
    expect(numberToFloat16Bits(-SMALLEST_SUBNORMAL / 4)).toBe(0x8000);
    expect(numberToFloat16Bits(SMALLEST_NORMAL - SMALLEST_SUBNORMAL / 2)).toBe(0x0400); // tie up into the normals
    expect(numberToFloat16Bits(65519)).toBe(0x7bff);
    expect(numberToFloat16Bits(65520)).toBe(0x7c00); // tie past the largest finite half: Infinity
    expect(numberToFloat16Bits(1e10)).toBe(0x7c00);
    expect(numberToFloat16Bits(-1e10)).toBe(0xfc00);
    expect(numberToFloat16Bits(1e-30)).toBe(0x0000);
  });

  it("round-trips every bit pattern that is not NaN", () => {
    const changed: number[] = [];
    for (let bits = 0; bits <= 0xffff; bits += 1) {
      const value = float16BitsToNumber(bits);
      if (!Number.isNaN(value) && numberToFloat16Bits(value) !== bits) changed.push(bits);
    }
    expect(changed).toEqual([]);
  });
});

describe("BF16", () => {
  it.each([
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3f80],
    [-2, 0xc000],
    [0.5, 0x3f00],
    [Infinity, 0x7f80],
    [-Infinity, 0xff80],
    [2 ** -133, 0x0001], // the smallest subnormal
  ])("encodes %s exactly (bits %i) and back", (value, bits) => {
    expect(numberToBfloat16Bits(value)).toBe(bits);
    expect(Object.is(bfloat16BitsToNumber(bits), value)).toBe(true);
  });

  it("keeps NaN a quiet NaN, both ways", () => {
    expect(numberToBfloat16Bits(NaN) & 0x7fc0).toBe(0x7fc0);
    expect(bfloat16BitsToNumber(0x7f81)).toBeNaN();
  });

  it("rounds to nearest, ties to even", () => {
    const ulp = 2 ** -7; // between 1 and 2
    expect(numberToBfloat16Bits(1 + ulp / 2)).toBe(0x3f80);
    expect(numberToBfloat16Bits(1 + ulp + ulp / 2)).toBe(0x3f82);
    expect(numberToBfloat16Bits(1 + ulp / 2 + 2 ** -12)).toBe(0x3f81);
    expect(numberToBfloat16Bits(3.4e38)).toBe(0x7f80); // past the largest finite bfloat16
    expect(numberToBfloat16Bits(2 ** -134)).toBe(0x0000); // tie to even: 0
  });

  it("round-trips every bit pattern that is not NaN", () => {
    const changed: number[] = [];
    for (let bits = 0; bits <= 0xffff; bits += 1) {
      const value = bfloat16BitsToNumber(bits);
      if (!Number.isNaN(value) && numberToBfloat16Bits(value) !== bits) changed.push(bits);
    }
    expect(changed).toEqual([]);
  });
});

describe("arrays", () => {
  it.each(["FP16", "BF16"] as const)("%s: encode then decode gives the nearest representable values", (datatype) => {
    const values = [0, -0, 1, -1.5, 0.1, 3.14159, 1e-3, -65504, Infinity, NaN];
    const bits = encodeHalfFloats(datatype, values);
    expect(bits).toBeInstanceOf(Uint16Array);
    const decoded = decodeHalfFloats(datatype, bits);
    expect(decoded).toBeInstanceOf(Float32Array);
    const one =
      datatype === "FP16"
        ? (v: number) => float16BitsToNumber(numberToFloat16Bits(v))
        : (v: number) => bfloat16BitsToNumber(numberToBfloat16Bits(v));
    expect(Array.from(decoded)).toEqual(values.map(one));
    expect(Array.from(encodeHalfFloats(datatype, decoded))).toEqual(Array.from(bits)); // a second trip changes nothing
  });
});

import { describe, expect, it } from "vitest";
import {
  assertTensorByteSize,
  bytesElementsToStrings,
  countBytesElements,
  decodeBytesElements,
  encodeBytesElements,
  forEachBytesElement,
} from "./tensor.js";

describe("BYTES tensors", () => {
  it("encodes strings in place and reads them back as strings or views", () => {
    const data = encodeBytesElements(["", "héllo", Buffer.from([0, 255]), "a"]);
    expect(data.length).toBe(4 * 4 + 0 + 6 + 2 + 1);
    expect(bytesElementsToStrings(data).slice(0, 2)).toEqual(["", "héllo"]);
    expect(decodeBytesElements(data).map((b) => [...b])).toEqual([[], [...Buffer.from("héllo")], [0, 255], [97]]);
    const seen: Array<[number, number, number]> = [];
    forEachBytesElement(data, "t", (start, end, index) => void seen.push([start, end, index]));
    expect(seen).toEqual([
      [4, 4, 0],
      [8, 14, 1],
      [18, 20, 2],
      [24, 25, 3],
    ]);
  });

  it("stops counting at the limit and names the flag", () => {
    const data = Buffer.alloc(4 * 1000);
    expect(countBytesElements(data, "x")).toBe(1000);
    expect(() => countBytesElements(data, "x", 999)).toThrow(
      /tensor 'x' has more BYTES elements, more than the limit of 999 per BYTES tensor \(--max-bytes-elements\)/,
    );
  });

  it("checks the element count on the shape before walking the bytes", () => {
    // Truncated data: a walk would fail differently; the shape alone is over the limit.
    expect(() =>
      assertTensorByteSize({ name: "x", datatype: "BYTES", shape: [1, 5000], data: Buffer.alloc(3) }, 4096),
    ).toThrow(/has 5000 BYTES elements, more than the limit of 4096/);
    expect(() =>
      assertTensorByteSize({ name: "x", datatype: "BYTES", shape: [2], data: Buffer.alloc(12) }, 4096),
    ).toThrow(/expected 2 BYTES elements for shape \[2\], got more/);
    expect(() =>
      assertTensorByteSize({ name: "x", datatype: "BYTES", shape: [3], data: Buffer.alloc(8) }, 4096),
    ).toThrow(/expected 3 BYTES elements for shape \[3\], got 2/);
  });
});

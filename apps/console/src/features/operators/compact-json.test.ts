import { describe, expect, it } from "vitest";
import { compactJson } from "./compact-json";
import { EXAMPLE_SPEC } from "./example-spec";

describe("compactJson", () => {
  it("keeps short arrays and objects on one line and breaks long ones", () => {
    const text = compactJson(EXAMPLE_SPEC);
    expect(text).toContain('{ "name": "A", "datatype": "FP32", "dims": [16] }');
    expect(text.split("\n").every((line) => line.length <= 100)).toBe(true);
    expect(text.startsWith("{\n")).toBe(true);
  });

  it("is the same JSON as JSON.stringify", () => {
    const value = { a: [1, [2, 3], { b: "x [ y ]" }], c: null, d: "z".repeat(120), e: {}, f: [] };
    expect(JSON.parse(compactJson(value))).toEqual(value);
  });
});

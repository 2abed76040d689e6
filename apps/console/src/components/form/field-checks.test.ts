import { describe, expect, it } from "vitest";
import { fieldChecks, required } from "./field-checks";

describe("fieldChecks", () => {
  it("keeps every failing field, in order, and only the first failure of each", () => {
    expect(
      fieldChecks([
        ["name", required("  ")],
        ["cost", "a number, 0 or more"],
        ["name", "too long"],
        ["cores", false],
        ["currency", null],
      ]),
    ).toEqual([
      { path: "name", message: "required" },
      { path: "cost", message: "a number, 0 or more" },
    ]);
  });

  it("is empty when every check holds", () => {
    expect(
      fieldChecks([
        ["name", required("gpu-box")],
        ["cost", undefined],
      ]),
    ).toEqual([]);
  });
});

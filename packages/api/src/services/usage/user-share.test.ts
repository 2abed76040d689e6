import { describe, expect, it } from "vitest";
import { userShareOf, usersPart } from "./user-share.js";

describe("userShareOf", () => {
  it("leaves perf runs' share of the interval's inferences out", () => {
    expect(userShareOf(10, 40)).toBe(0.25);
    expect(userShareOf(0, 41)).toBe(0);
    expect(userShareOf(30, 30)).toBe(1);
  });
  it("counts an interval without inferences wholly as the users' (idle instances are theirs)", () => {
    expect(userShareOf(0, 0)).toBe(1);
  });
  it("scales a utilization, keeping an unknown one unknown", () => {
    expect(usersPart(0.5, 0.25)).toBe(0.125);
    expect(usersPart(null, 0.25)).toBeNull();
  });
});

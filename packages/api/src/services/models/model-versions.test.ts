import { describe, expect, it } from "vitest";
import { MAX_MODEL_VERSION, nextModelVersion } from "./model-versions.js";

describe("nextModelVersion", () => {
  it("is the highest taken version + 1, or 1", () => {
    expect(nextModelVersion("m", [])).toBe(1);
    expect(nextModelVersion("m", [3, 1, 7])).toBe(8);
    expect(nextModelVersion("m", [MAX_MODEL_VERSION - 1])).toBe(MAX_MODEL_VERSION);
  });

  it("refuses to go past 2^31-1, naming the way out, and ignores numbers beyond the range", () => {
    expect(() => nextModelVersion("m", [2, MAX_MODEL_VERSION])).toThrow(
      /model 'm' has version 2147483647, the highest a version may be .* give the upload a free version number/,
    );
    expect(nextModelVersion("m", [2, 99_999_999_999])).toBe(3);
  });
});

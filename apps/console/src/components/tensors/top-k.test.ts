import { describe, expect, it } from "vitest";
import { topK } from "./top-k";

describe("topK", () => {
  it("gives the largest values first with their flat index", () => {
    expect(topK([0.1, 0.7, 0.05, 0.15], 2)).toEqual([
      { index: 1, value: 0.7 },
      { index: 3, value: 0.15 },
    ]);
  });

  it("keeps the first index of equal values", () => {
    expect(topK([1, 3, 3, 2], 2)).toEqual([
      { index: 1, value: 3 },
      { index: 2, value: 3 },
    ]);
  });

  it("has nothing to rank for text, booleans, one value or non-finite data", () => {
    expect(topK(["a", "b"], 3)).toEqual([]);
    expect(topK([true, false], 3)).toEqual([]);
    expect(topK([5], 3)).toEqual([]);
    expect(topK([1, Number.NaN], 3)).toEqual([]);
  });

  it("returns all values when there are fewer than k", () => {
    expect(topK([2, 1, 3], 5).map((entry) => entry.index)).toEqual([2, 0, 1]);
  });
});

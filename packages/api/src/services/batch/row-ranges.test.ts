import { describe, expect, it } from "vitest";
import { addRange, chunksOf, missingRanges, parseRanges, removeRows, rowsIn } from "./row-ranges.js";

describe("row ranges (a job's checkpoint)", () => {
  it("merges overlapping and adjacent ranges, in any order", () => {
    let ranges = addRange([], 512, 768);
    ranges = addRange(ranges, 0, 256);
    expect(ranges).toEqual([
      [0, 256],
      [512, 768],
    ]);
    ranges = addRange(ranges, 256, 512);
    expect(ranges).toEqual([[0, 768]]);
    expect(addRange(ranges, 10, 20)).toEqual([[0, 768]]);
    expect(rowsIn(addRange(ranges, 1000, 1001))).toBe(769);
  });

  it("finds the rows left and splits them into chunks on the same grid after a restart", () => {
    const done = parseRanges([
      [256, 512],
      [768, 1000],
    ]);
    expect(missingRanges(done, 1000)).toEqual([
      [0, 256],
      [512, 768],
    ]);
    expect(chunksOf(missingRanges(done, 1000), 128)).toEqual([
      [0, 128],
      [128, 256],
      [512, 640],
      [640, 768],
    ]);
    expect(missingRanges([[0, 1000]], 1000)).toEqual([]);
    expect(missingRanges([], 0)).toEqual([]);
  });

  it("takes retried rows out of the checkpoint", () => {
    expect(removeRows([[0, 10]], [0, 5, 9])).toEqual([
      [1, 5],
      [6, 9],
    ]);
    expect(removeRows([[0, 3]], [7])).toEqual([[0, 3]]);
  });

  it("refuses a checkpoint that is not a list of integer ranges", () => {
    expect(() => parseRanges({})).toThrow(/not a list/);
    expect(() => parseRanges([[1, "2"]])).toThrow(/not a \[start, end\) range/);
    expect(() => parseRanges([[-1, 2]])).toThrow(/not a \[start, end\) range/);
  });
});

import { describe, expect, it } from "vitest";
import { expandLoadRange, MAX_RANGE_VALUES, parseLoadRange } from "./load-range.js";
import { PerfError } from "./perf-error.js";

describe("load ranges (start:end:step, additive like perf_analyzer)", () => {
  it("parses one, two and three parts", () => {
    expect(parseLoadRange("4", "integer")).toEqual({ start: 4, end: 4, step: 1 });
    expect(parseLoadRange("1:4", "integer")).toEqual({ start: 1, end: 4, step: 1 });
    expect(parseLoadRange(" 2:10:4 ", "integer")).toEqual({ start: 2, end: 10, step: 4 });
  });

  it("expands additively, including end only when a step lands on it", () => {
    expect(expandLoadRange(parseLoadRange("1:4", "integer"))).toEqual([1, 2, 3, 4]);
    expect(expandLoadRange(parseLoadRange("1:8:2", "integer"))).toEqual([1, 3, 5, 7]);
    expect(expandLoadRange(parseLoadRange("2:10:4", "integer"))).toEqual([2, 6, 10]);
    expect(expandLoadRange(parseLoadRange("1:64:2", "integer"))).toHaveLength(32);
    expect(expandLoadRange(parseLoadRange("5", "integer"))).toEqual([5]);
  });

  it("accepts fractional request rates without drift", () => {
    expect(expandLoadRange(parseLoadRange("0.5:1.5:0.1", "number"))).toEqual([
      0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.2, 1.3, 1.4, 1.5,
    ]);
    expect(parseLoadRange("12.5", "number")).toEqual({ start: 12.5, end: 12.5, step: 1 });
  });

  it.each([
    ["", "expected start[:end[:step]]"],
    ["1:2:3:4", "expected start[:end[:step]]"],
    ["1::2", "expected start[:end[:step]]"],
    ["a:4", "'a' is not a positive whole number"],
    ["1.5:4", "'1.5' is not a positive whole number"],
    ["-1:4", "'-1' is not a positive whole number"],
    ["0:4", "start must be greater than 0"],
    ["4:1", "end (1) is below start (4)"],
    ["1:4:0", "step must be greater than 0"],
    [`1:${MAX_RANGE_VALUES + 1}`, `more than ${MAX_RANGE_VALUES} steps`],
  ])("refuses %j as a concurrency range", (text, problem) => {
    let thrown: unknown;
    try {
      parseLoadRange(text, "integer", "--concurrency-range");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PerfError);
    expect((thrown as PerfError).code).toBe("BAD_OPTIONS");
    expect((thrown as PerfError).message).toContain(`--concurrency-range '${text}'`);
    expect((thrown as PerfError).message).toContain(problem);
  });

  it("refuses non-numbers in a request-rate range", () => {
    expect(() => parseLoadRange("1e3", "number", "--request-rate-range")).toThrow(/'1e3' is not a positive number/);
    expect(() => parseLoadRange("10:5", "number")).toThrow(/end \(5\) is below start \(10\)/);
  });
});

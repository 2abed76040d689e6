import { describe, expect, it } from "vitest";
import { HEAP_SHARE, assertJsonWithinBudget, estimateParsedHeapBytes } from "./json-budget.js";

const bytes = (text: string): Buffer => Buffer.from(text, "utf8");

describe("assertJsonWithinBudget", () => {
  it("accepts a KServe body with nested data", () => {
    const body = JSON.stringify({
      inputs: [
        {
          name: "x",
          datatype: "FP32",
          shape: [2, 2],
          data: [
            [1, 2],
            [3, 4],
          ],
        },
      ],
      parameters: { a: "{[[" },
    });
    expect(() => assertJsonWithinBudget(bytes(body), { maxDepth: 5, maxContainers: 10 })).not.toThrow();
  });

  it("refuses nesting deeper than the budget, naming the limit", () => {
    expect(() => assertJsonWithinBudget(bytes(`${"[".repeat(65)}${"]".repeat(65)}`))).toThrow(
      /nested deeper than 64 levels/,
    );
  });

  it("refuses more objects and arrays than the budget: the 'inputs of empty objects' attack", () => {
    const body = `{"inputs":[${new Array(1001).fill("{}").join(",")}]}`;
    expect(() => assertJsonWithinBudget(bytes(body), { maxDepth: 64, maxContainers: 1000 })).toThrow(
      /more than 1000 objects and arrays/,
    );
  });

  it("judges a Buffer by counting its openings and a plain Uint8Array by the scan, with the same verdicts", () => {
    const deep = `${"[".repeat(4)}${"]".repeat(4)}`;
    const budget = { maxDepth: 3, maxContainers: 10 };
    for (const body of [bytes(deep), new Uint8Array(bytes(deep))]) {
      expect(() => assertJsonWithinBudget(body, budget)).toThrow(/nested deeper than 3 levels/);
    }
    const flat = `{"a":[1],"b":"[[[["}`; // 6 openings counted, 2 real: the count is over 3, the scan accepts it
    for (const body of [bytes(flat), new Uint8Array(bytes(flat)), bytes(`[[[]]]`)]) {
      expect(() => assertJsonWithinBudget(body, budget)).not.toThrow();
    }
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    const body = JSON.stringify({ id: `\\"${"{[".repeat(100)}`, inputs: [] });
    expect(() => assertJsonWithinBudget(bytes(body), { maxDepth: 3, maxContainers: 3 })).not.toThrow();
  });

  it("refuses, before parsing, a body whose parsed value would not fit maxHeapBytes, naming the memory", () => {
    // 100,000 one-character strings: about 2 x (8 + 24 + 1) bytes each once parsed, some 6.3 MiB.
    const body = bytes(JSON.stringify(Array.from({ length: 100_000 }, () => "a")));
    expect(estimateParsedHeapBytes({ containers: 1, values: 100_000, strings: 100_000, stringBytes: 100_000 })).toBe(
      2 * (8 * 100_000 + 24 * 100_000 + 100_000 + 64),
    );
    const tight = { maxDepth: 64, maxContainers: 1000, maxHeapBytes: 4 * 1024 * 1024 * HEAP_SHARE };
    expect(() => assertJsonWithinBudget(body, tight)).toThrow(
      /too large or too complex to decode within the decoder's 4 MiB of memory \(parsing it would take about 6 MiB\)/,
    );
    expect(() => assertJsonWithinBudget(body, { ...tight, maxHeapBytes: 8 * 1024 * 1024 })).not.toThrow();
    // A numeric tensor of the same length needs far less (unboxed elements, no strings).
    const numbers = bytes(JSON.stringify(Array.from({ length: 100_000 }, (_, i) => i)));
    expect(() => assertJsonWithinBudget(numbers, tight)).not.toThrow();
  });
});

import { describe, expect, it } from "vitest";
import { assertJsonWithinBudget } from "./json-budget.js";

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

  it("does not count brackets inside strings, escaped quotes included", () => {
    const body = JSON.stringify({ id: `\\"${"{[".repeat(100)}`, inputs: [] });
    expect(() => assertJsonWithinBudget(bytes(body), { maxDepth: 3, maxContainers: 3 })).not.toThrow();
  });
});

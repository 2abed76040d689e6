import { describe, expect, it } from "vitest";
import { schemasAt } from "./spec-completion";

describe("spec editor: completion from the JSON Schema", () => {
  it("follows the JSON Schema to the step kinds and narrows a step's properties by its kind", () => {
    const kinds = schemasAt(["steps", 0, "kind"], () => ({})).map((schema) => schema["const"]);
    expect(kinds).toEqual(["model", "route", "exit"]);
    const route = schemasAt(["steps", 0], (depth): Record<string, string> => (depth === 2 ? { kind: "route" } : {}));
    expect(Object.keys(route[0]!["properties"] as object)).toContain("cases");
    expect(route).toHaveLength(1);
  });
});

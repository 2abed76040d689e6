import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { operatorSpecJsonSchema } from "./json-schema.js";

describe("operatorSpecJsonSchema", () => {
  it("matches the committed operator-spec.schema.json (regenerate: npm run schema -w @operon/operator-spec)", () => {
    const committed = readFileSync(new URL("../operator-spec.schema.json", import.meta.url), "utf8");
    expect(committed).toBe(`${JSON.stringify(operatorSpecJsonSchema(), null, 2)}\n`);
  });

  it("describes the document people write: required fields and the three step kinds, named under $defs", () => {
    interface Node {
      required?: string[];
      properties?: Record<string, Node>;
      items?: Node;
      oneOf?: Node[];
      $ref?: string;
      $defs?: Record<string, Node>;
      const?: string;
    }
    const schema = operatorSpecJsonSchema() as Node;
    const resolve = (node: Node): Node =>
      node.$ref !== undefined ? schema.$defs![node.$ref.replace("#/$defs/", "")]! : node;
    expect(schema.required).toEqual(["name", "inputs", "outputs", "steps"]);
    const kinds = schema.properties!["steps"]!.items!.oneOf!.map((step) => resolve(step).properties!["kind"]!.const);
    expect(kinds).toEqual(["model", "route", "exit"]);
    expect(Object.keys(schema.$defs!).sort()).toEqual([
      "Condition",
      "ExitStep",
      "ModelStep",
      "RouteCase",
      "RouteStep",
      "TensorSpec",
    ]);
  });
});

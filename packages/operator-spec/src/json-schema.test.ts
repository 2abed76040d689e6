import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { operatorSpecJsonSchema } from "./json-schema.js";

describe("operatorSpecJsonSchema", () => {
  it("matches the committed operator-spec.schema.json (regenerate: npm run schema -w @operon/operator-spec)", () => {
    const committed = readFileSync(new URL("../operator-spec.schema.json", import.meta.url), "utf8");
    expect(committed).toBe(`${JSON.stringify(operatorSpecJsonSchema(), null, 2)}\n`);
  });

  it("describes the document people write: required fields and the three step kinds", () => {
    const schema = operatorSpecJsonSchema() as { required: string[]; properties: { steps: { items: { oneOf: Array<{ properties: { kind: { const: string } } }> } } } };
    expect(schema.required).toEqual(["name", "inputs", "outputs", "steps"]);
    expect(schema.properties.steps.items.oneOf.map((step) => step.properties.kind.const)).toEqual(["model", "route", "exit"]);
  });
});

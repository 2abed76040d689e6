import { describe, expect, it } from "vitest";
import { problemDiagnostics } from "./spec-problem-lint";

const SPEC = `{
  "inputs": [{ "name": "A", "datatype": "FP32", "dims": [4] }],
  "outputs": [{ "name": "Y", "datatype": "FP32", "dims": [4] }],
  "steps": [
    { "id": "first", "kind": "model", "model": "add_sub", "inputs": { "INPUT0": "A" }, "outputs": { "OUTPUT0": "Y" } },
    { "id": "second",
      "kind": "model", "model": "nope", "inputs": {}, "outputs": { "OUTPUT0": "Z" } }
  ]
}`;

const lineOf = (text: string, offset: number) => text.slice(0, offset).split("\n").length;

describe("spec editor: problems at their lines", () => {
  it("marks a step named by id on its field, a step by index on its first line, and skips what names nothing", () => {
    const diagnostics = problemDiagnostics(SPEC, [
      "step 'second': model 'nope' is not served (load it first)",
      "steps[1]: something",
      "operator output 'Y' is odd",
      "no subject",
    ]);
    expect(diagnostics.map((d) => [lineOf(SPEC, d.from), SPEC.slice(d.from, d.to)])).toEqual([
      [3, '{ "name": "Y", "datatype": "FP32", "dims": [4] }'],
      [6, '{ "id": "second",'],
      [7, '"model": "nope"'],
    ]);
  });
});

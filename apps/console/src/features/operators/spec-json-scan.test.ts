import { describe, expect, it } from "vitest";
import { scanJson } from "./spec-json-scan";

describe("spec editor: reading JSON as typed", () => {
  it("knows a cursor in a step's kind value, with the step's path and what it holds so far", () => {
    const text = '{ "steps": [{ "id": "a", "kind": "mo';
    const { cursor } = scanJson(text);
    expect(cursor).toMatchObject({ role: "value", inString: true, from: text.length - 2 });
    expect(cursor!.frames.at(-1)).toMatchObject({
      kind: "object",
      path: ["steps", 0],
      key: "kind",
      strings: { id: "a" },
    });
  });

  it("knows a cursor in a key", () => {
    const { cursor } = scanJson('{ "inputs": [], "st');
    expect(cursor).toMatchObject({ role: "key", inString: true });
    expect(cursor!.frames.at(-1)!.keys).toEqual(["inputs"]);
  });
});

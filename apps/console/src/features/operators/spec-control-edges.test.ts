import { describe, expect, it } from "vitest";
import { specGraph } from "@operon/operator-spec/spec-graph";
import { addBranch, controlChoices, removeBranch, removeExitAnswer, setExitAnswer } from "./spec-control-edges";

/** A guard exit, then a route between two models; the branch and the exit's answer are what the editor edits. */
const SPEC = {
  inputs: [{ name: "x", datatype: "FP32", dims: [4] }],
  outputs: [{ name: "y", datatype: "FP32", dims: [4] }],
  steps: [
    { id: "gate", kind: "exit", input: "x", when: { lessThan: 0 }, outputs: {} },
    { id: "pick", kind: "route", input: "$param.mode", cases: [{ when: { equals: "fast" }, next: [] }] },
    { id: "fast", kind: "model", model: "m", inputs: { IN: "x" }, outputs: { OUT: "y" } },
    { id: "slow", kind: "model", model: "n", inputs: { IN: "x" }, outputs: { OUT: "slow_y" } },
  ],
};

const edges = (spec: unknown, kind: "branch" | "answer") =>
  specGraph(spec)
    .edges.filter((edge) => edge.kind === kind)
    .map((edge) => `${edge.source} -> ${edge.target}: ${edge.label}`);

describe("branch and exit edges edited on the spec", () => {
  it("offers the spec's routes with their branches, exits, steps, outputs and tensors", () => {
    expect(controlChoices(SPEC)).toEqual({
      routes: [
        {
          id: "pick",
          branches: [
            { key: 0, text: 'case 1: = "fast"' },
            { key: "default", text: "default" },
          ],
        },
      ],
      exits: ["gate"],
      steps: ["gate", "pick", "fast", "slow"],
      outputs: ["y"],
      tensors: ["x", "y", "slow_y"],
    });
    expect(controlChoices("not a spec").routes).toEqual([]);
  });

  it("adds a case's branch and a default (created when missing), and draws them", () => {
    const once = addBranch(SPEC, "pick", 0, "fast");
    expect(once.ok).toBe(true);
    if (!once.ok) return;
    const twice = addBranch(once.spec, "pick", "default", "slow");
    expect(twice.ok).toBe(true);
    if (!twice.ok) return;
    expect(twice.spec["steps"]).toContainEqual({
      id: "pick",
      kind: "route",
      input: "$param.mode",
      cases: [{ when: { equals: "fast" }, next: ["fast"] }],
      default: ["slow"],
    });
    expect(edges(twice.spec, "branch")).toEqual([
      'step:pick -> step:fast: = "fast"',
      "step:pick -> step:slow: default",
    ]);
    // The original is left as it was: edits return a new spec.
    expect(SPEC.steps[1]).toEqual({
      id: "pick",
      kind: "route",
      input: "$param.mode",
      cases: [{ when: { equals: "fast" }, next: [] }],
    });
  });

  it("removes a branch, and an emptied default with it", () => {
    const added = addBranch(SPEC, "pick", "default", "slow");
    if (!added.ok) throw new Error(added.message);
    const removed = removeBranch(added.spec, "pick", "default", "slow");
    expect(removed.ok && removed.spec["steps"]).toContainEqual(SPEC.steps[1]);
    expect(removeBranch(SPEC, "pick", 0, "fast")).toEqual({
      ok: false,
      message: "route 'pick' does not run 'fast' on case 1",
    });
  });

  it("refuses what cannot be written, saying why", () => {
    expect(addBranch(SPEC, "fast", 0, "slow")).toEqual({ ok: false, message: "step 'fast' is a model, not a route" });
    expect(addBranch(SPEC, "pick", 0, "pick")).toEqual({ ok: false, message: "route 'pick' cannot activate itself" });
    expect(addBranch(SPEC, "pick", 3, "slow")).toEqual({ ok: false, message: "route 'pick' has no case 4" });
    expect(addBranch(SPEC, "pick", 0, "nope")).toEqual({ ok: false, message: "the spec has no step 'nope'" });
    const added = addBranch(SPEC, "pick", 0, "fast");
    if (!added.ok) throw new Error(added.message);
    expect(addBranch(added.spec, "pick", 0, "fast")).toEqual({
      ok: false,
      message: "route 'pick' already runs 'fast' on case 1",
    });
    expect(setExitAnswer(SPEC, "gate", "z", "x")).toEqual({
      ok: false,
      message: "the spec has no operator output 'z'",
    });
    expect(setExitAnswer(SPEC, "pick", "y", "x")).toEqual({
      ok: false,
      message: "step 'pick' is a route, not an exit",
    });
    expect(setExitAnswer(SPEC, "gate", "y", " ")).toEqual({
      ok: false,
      message: "name the tensor the exit answers with",
    });
  });

  it("sets, replaces and removes an exit's answer for an output, and draws it", () => {
    const set = setExitAnswer(SPEC, "gate", "y", "x");
    if (!set.ok) throw new Error(set.message);
    expect(edges(set.spec, "answer")).toEqual(["step:gate -> out:y: exit: x → y"]);
    const replaced = setExitAnswer(set.spec, "gate", "y", "slow_y");
    if (!replaced.ok) throw new Error(replaced.message);
    expect(edges(replaced.spec, "answer")).toEqual(["step:gate -> out:y: exit: slow_y → y"]);
    const removed = removeExitAnswer(replaced.spec, "gate", "y");
    expect(removed.ok && edges(removed.spec, "answer")).toEqual([]);
    expect(removeExitAnswer(SPEC, "gate", "y")).toEqual({
      ok: false,
      message: "exit 'gate' does not answer operator output 'y'",
    });
  });
});

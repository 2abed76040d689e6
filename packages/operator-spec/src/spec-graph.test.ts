import { describe, expect, it } from "vitest";
import { specGraph } from "./spec-graph.js";

/** The console's starting spec: the README's two-step DAG over the example add_sub model. */
const EXAMPLE_SPEC = {
  inputs: [
    { name: "A", datatype: "FP32", dims: [16] },
    { name: "B", datatype: "FP32", dims: [16] },
  ],
  outputs: [{ name: "Y", datatype: "FP32", dims: [16] }],
  maxBatchSize: 8,
  steps: [
    { id: "first", kind: "model", model: "add_sub", inputs: { INPUT0: "A", INPUT1: "B" }, outputs: { OUTPUT0: "sum" } },
    {
      id: "second",
      kind: "model",
      model: "add_sub",
      inputs: { INPUT0: "sum", INPUT1: "B" },
      outputs: { OUTPUT0: "Y" },
    },
  ],
};

describe("specGraph", () => {
  it("draws the example as inputs, model steps and outputs joined by their tensor mappings", () => {
    const graph = specGraph(EXAMPLE_SPEC);
    expect(graph.nodes.map((node) => `${node.id} ${node.kind}`)).toEqual([
      "in:A input",
      "in:B input",
      "step:first model",
      "step:second model",
      "out:Y output",
    ]);
    expect(graph.edges.map((edge) => `${edge.source} -> ${edge.target}: ${edge.label}`)).toEqual([
      "in:A -> step:first: A → INPUT0",
      "in:B -> step:first: B → INPUT1",
      "step:first -> step:second: sum → INPUT0",
      "in:B -> step:second: B → INPUT1",
      "step:second -> out:Y: OUTPUT0 → Y",
    ]);
  });

  it("draws routes and exits as processing steps with their conditions", () => {
    const graph = specGraph({
      inputs: [{ name: "x", datatype: "FP32", dims: [1] }],
      outputs: [{ name: "y", datatype: "FP32", dims: [1] }],
      steps: [
        { id: "gate", kind: "exit", input: "x", when: { lessThan: 0 }, outputs: { y: "x" } },
        {
          id: "pick",
          kind: "route",
          input: "$param.mode",
          cases: [{ when: { equals: "fast" }, next: ["fast"] }],
          default: ["slow"],
        },
        { id: "fast", kind: "model", model: "m", inputs: { IN: "x" }, outputs: { OUT: "y" } },
        { id: "slow", kind: "model", model: "n", inputs: { IN: "x" }, outputs: { OUT: "y" } },
      ],
    });
    expect(graph.nodes.find((node) => node.id === "step:gate")).toMatchObject({
      kind: "exit",
      detail: "exit when x < 0",
    });
    expect(graph.edges.filter((edge) => edge.kind === "branch").map((edge) => `${edge.target}: ${edge.label}`)).toEqual(
      ['step:fast: = "fast"', "step:slow: default"],
    );
    expect(graph.edges.filter((edge) => edge.kind === "answer").map((edge) => edge.label)).toEqual(["exit: x → y"]);
  });

  it("says which branch of its route each branch edge is (the editor removes that one)", () => {
    const graph = specGraph({
      inputs: [{ name: "x", datatype: "FP32", dims: [1] }],
      outputs: [],
      steps: [
        {
          id: "pick",
          kind: "route",
          input: "x",
          // An unreadable case still counts: indexes are the spec's.
          cases: ["half-typed", { when: { lessThan: 0 }, next: ["a"] }, { when: { greaterThan: 1 }, next: ["a", "b"] }],
          default: ["b"],
        },
        { id: "a", kind: "model", model: "m", inputs: {}, outputs: {} },
        { id: "b", kind: "model", model: "m", inputs: {}, outputs: {} },
      ],
    });
    expect(graph.edges.filter((edge) => edge.kind === "branch").map((edge) => [edge.target, edge.branch])).toEqual([
      ["step:a", 1],
      ["step:a", 2],
      ["step:b", 2],
      ["step:b", "default"],
    ]);
  });

  it("draws what it can of a half-written spec", () => {
    expect(
      specGraph({
        inputs: [{ name: "A" }],
        steps: [{ kind: "model" }, { id: "s", kind: "model", inputs: { I: "A" } }],
      }).nodes.map((node) => node.id),
    ).toEqual(["in:A", "step:s"]);
    expect(specGraph("not a spec")).toEqual({ nodes: [], edges: [] });
  });
});

describe("specGraph ports", () => {
  it("names the port each data edge leaves and enters by", () => {
    const graph = specGraph(EXAMPLE_SPEC);
    expect(graph.edges.map((edge) => `${edge.source}.${edge.sourcePort} -> ${edge.target}.${edge.targetPort}`)).toEqual(
      [
        "in:A.A -> step:first.INPUT0",
        "in:B.B -> step:first.INPUT1",
        "step:first.OUTPUT0 -> step:second.INPUT0",
        "in:B.B -> step:second.INPUT1",
        "step:second.OUTPUT0 -> out:Y.Y",
      ],
    );
  });

  it("enters a route or exit by its input port, and leaves branch edges without ports", () => {
    const graph = specGraph({
      inputs: [{ name: "x", datatype: "FP32", dims: [1] }],
      outputs: [],
      steps: [
        { id: "pick", kind: "route", input: "x", cases: [], default: ["next"] },
        { id: "next", kind: "model", model: "m", inputs: {}, outputs: {} },
      ],
    });
    expect(graph.edges.map((edge) => [edge.kind, edge.sourcePort, edge.targetPort])).toEqual([
      ["data", "x", "input"],
      ["branch", undefined, undefined],
    ]);
  });
});

import { describe, expect, it } from "vitest";
import type { OperatorSpec, StepSpec } from "./operator-spec-schema.js";
import { analyzeOperator, structuralProblems } from "./operator-structure.js";

const fp32 = (name: string, dims: number[] = [16], optional = false) => ({
  name,
  datatype: "FP32" as const,
  dims,
  optional,
});

function spec(steps: StepSpec[], extra: Partial<OperatorSpec> = {}): OperatorSpec {
  return { name: "op", maxBatchSize: 8, inputs: [fp32("IN")], outputs: [fp32("OUT")], steps, ...extra };
}

const pre = (id: string, input: string, output: string): StepSpec => ({
  id,
  kind: "model",
  model: "pre",
  inputs: { x: input },
  outputs: { y: output },
});

function codes(s: OperatorSpec): string[] {
  return structuralProblems(s).map((problem) => problem.code);
}

function messages(s: OperatorSpec): string {
  return structuralProblems(s)
    .map((problem) => problem.message)
    .join("\n");
}

describe("structuralProblems", () => {
  it("unknown tensors", () => {
    const s = spec([pre("a", "nowhere", "OUT")]);
    expect(codes(s)).toEqual(["unknown-tensor"]);
    expect(messages(s)).toContain(
      "step 'a' reads tensor 'nowhere' (for input 'x'), which is neither an operator input nor produced by any step",
    );
    const route = spec([pre("a", "IN", "OUT"), { id: "r", kind: "route", input: "ghost", cases: [], default: ["a"] }]);
    expect(messages(route)).toContain("route step 'r' reads tensor 'ghost'");
  });

  it("tensors produced twice", () => {
    const s = spec([pre("a", "IN", "OUT"), pre("b", "IN", "OUT")]);
    expect(codes(s)).toEqual(["duplicate-producer"]);
    expect(messages(s)).toContain("tensor 'OUT' is produced by both step 'a' and step 'b'");
    expect(messages(spec([pre("a", "IN", "IN"), pre("b", "IN", "OUT")]))).toContain(
      "tensor 'IN' is an operator input and is also produced by step 'a'",
    );
  });

  it("allows one tensor from the exclusive branches of a route, not from one branch", () => {
    const route = (cases: string[][]): StepSpec => ({
      id: "r",
      kind: "route",
      input: "$param.mode",
      cases: cases.map((next, i) => ({ when: { equals: i }, next })),
    });
    expect(codes(spec([route([["a"], ["b"]]), pre("a", "IN", "OUT"), pre("b", "IN", "OUT")]))).toEqual([]);
    expect(codes(spec([route([["a", "b"]]), pre("a", "IN", "OUT"), pre("b", "IN", "OUT")]))).toEqual([
      "duplicate-producer",
    ]);
  });

  it("unreachable outputs", () => {
    const s = spec([pre("a", "IN", "t")]);
    expect(codes(s)).toEqual(["unreachable-output"]);
    expect(messages(s)).toContain("operator output 'OUT' is not produced by any step");
  });

  it("routes naming unknown steps, themselves, or steps of another route", () => {
    const s = spec([
      pre("a", "IN", "OUT"),
      { id: "r1", kind: "route", input: "IN", cases: [{ when: { lessThan: 0 }, next: ["a", "ghost", "r1"] }] },
      { id: "r2", kind: "route", input: "IN", cases: [], default: ["a"] },
    ]);
    const text = messages(s);
    expect(text).toContain("route 'r1' names unknown step 'ghost'");
    expect(text).toContain("route 'r1' names itself as a branch");
    expect(text).toContain("step 'a' is a branch of both route 'r1' and route 'r2'");
  });

  it("exits must answer exactly the operator outputs", () => {
    const s = spec([
      pre("a", "IN", "OUT"),
      { id: "e", kind: "exit", input: "IN", when: { equals: 0 }, outputs: { OTHER: "IN" } },
    ]);
    const text = messages(s);
    expect(codes(s)).toEqual(["bad-exit", "bad-exit"]);
    expect(text).toContain("exit 'e' answers 'OTHER', which is not an operator output");
    expect(text).toContain("exit 'e' does not answer operator output 'OUT'");
  });

  it("names a data cycle step by step", () => {
    const s = spec([pre("a", "u", "t"), pre("b", "t", "u"), pre("c", "IN", "OUT")]);
    expect(codes(s)).toEqual(["cycle"]);
    expect(messages(s)).toBe("cycle: 'a' -(tensor 't')-> 'b' -(tensor 'u')-> 'a'");
  });

  it("counts an exit's wait as an edge: an exit reading a step listed after it is a cycle", () => {
    const s = spec([
      { id: "e", kind: "exit", input: "OUT", when: { equals: 0 }, outputs: { OUT: "OUT" } },
      pre("a", "IN", "OUT"),
    ]);
    expect(messages(s)).toBe("cycle: 'e' -(listed after the exit)-> 'a' -(tensor 'OUT')-> 'e'");
  });
});

describe("analyzeOperator", () => {
  it("resolves reads, writes, route gates and exit guards", () => {
    const graph = analyzeOperator(
      spec([
        pre("a", "IN", "t"),
        { id: "e", kind: "exit", input: "t", when: { equals: 1 }, outputs: { OUT: "t" } },
        { id: "r", kind: "route", input: "$param.p", cases: [{ when: { equals: 1 }, next: ["b"] }], default: ["c"] },
        pre("b", "t", "OUT"),
        pre("c", "t", "OUT"),
      ]),
    );
    expect(graph.nodes.get("e")!.reads).toEqual(["t"]);
    expect(graph.nodes.get("r")!.reads).toEqual([]);
    expect(graph.nodes.get("b")!.gate).toBe("r");
    expect(graph.nodes.get("a")!.guards).toEqual([]);
    expect(graph.nodes.get("c")!.guards).toEqual(["e"]);
    expect(graph.producers.get("OUT")).toEqual(["b", "c"]);
  });
});

import { PARAM_PREFIX, type OperatorSpec, type StepSpec } from "./operator-spec-schema.js";

/**
 * The graph of a parsed spec and the checks that need no model: what the
 * gateway's validator (which adds the checks against the models it serves)
 * and its DAG executor share.
 */
export type OperatorProblemCode =
  | "cycle"
  | "unknown-model"
  | "unknown-model-tensor"
  | "unmapped-model-input"
  | "unknown-tensor"
  | "duplicate-producer"
  | "type-mismatch"
  | "shape-mismatch"
  | "batch-size"
  | "unreachable-output"
  | "unknown-step"
  | "bad-branch"
  | "bad-exit";

export interface OperatorProblem {
  code: OperatorProblemCode;
  message: string;
}

/** A step with its data and control dependencies resolved. */
export interface StepNode {
  step: StepSpec;
  index: number;
  /** Tensors the step reads (request parameters excluded), without duplicates. */
  reads: string[];
  /** Tensors the step produces. */
  writes: string[];
  /** The route whose cases name this step, if any: the step runs only when that route activates it. */
  gate: string | undefined;
  /** Exits listed before this step: it starts only after each has decided not to exit. */
  guards: string[];
}

export interface OperatorGraph {
  nodes: Map<string, StepNode>;
  /** Tensor name -> ids of the steps that produce it. */
  producers: Map<string, string[]>;
  /** Route id -> per case (then default, if any) the step ids it activates. */
  branches: Map<string, string[][]>;
}

export function analyzeOperator(spec: OperatorSpec): OperatorGraph {
  const nodes = new Map<string, StepNode>();
  const producers = new Map<string, string[]>();
  const branches = new Map<string, string[][]>();
  const exitsSoFar: string[] = [];
  spec.steps.forEach((step, index) => {
    const reads: string[] = [];
    const writes: string[] = [];
    const read = (tensor: string): void => {
      if (!tensor.startsWith(PARAM_PREFIX) && !reads.includes(tensor)) reads.push(tensor);
    };
    if (step.kind === "model") {
      Object.values(step.inputs).forEach(read);
      for (const tensor of Object.values(step.outputs)) if (!writes.includes(tensor)) writes.push(tensor);
    } else if (step.kind === "route") {
      read(step.input);
      branches.set(step.id, [...step.cases.map((c) => c.next), ...(step.default !== undefined ? [step.default] : [])]);
    } else {
      read(step.input);
      Object.values(step.outputs).forEach(read);
    }
    for (const tensor of writes) producers.set(tensor, [...(producers.get(tensor) ?? []), step.id]);
    nodes.set(step.id, { step, index, reads, writes, gate: undefined, guards: [...exitsSoFar] });
    if (step.kind === "exit") exitsSoFar.push(step.id);
  });
  for (const [route, lists] of branches) {
    for (const id of new Set(lists.flat())) {
      const node = nodes.get(id);
      if (node !== undefined && node.gate === undefined && id !== route) node.gate = route;
    }
  }
  return { nodes, producers, branches };
}

/** True when the tensor is an operator input or some step produces it. */
export function isKnownTensor(spec: OperatorSpec, graph: OperatorGraph, tensor: string): boolean {
  return spec.inputs.some((input) => input.name === tensor) || graph.producers.has(tensor);
}

/**
 * Every problem of a (parsed) spec that needs no model: tensors produced
 * twice, unknown tensors, branches naming unknown steps, exits that do not
 * answer exactly the operator outputs, outputs no step produces, cycles
 * (named). Empty = the graph holds together.
 */
export function structuralProblems(
  spec: OperatorSpec,
  graph: OperatorGraph = analyzeOperator(spec),
): OperatorProblem[] {
  const problems: OperatorProblem[] = [];
  const problem = (code: OperatorProblemCode, message: string): void => void problems.push({ code, message });
  const operatorInputs = new Set(spec.inputs.map((t) => t.name));
  const operatorOutputs = new Set(spec.outputs.map((t) => t.name));
  const known = (tensor: string): boolean => isKnownTensor(spec, graph, tensor);

  // Tensors produced twice: by two steps (unless they are in different cases of one route), or a step and the request.
  for (const [tensor, ids] of graph.producers) {
    if (operatorInputs.has(tensor)) {
      problem(
        "duplicate-producer",
        `tensor '${tensor}' is an operator input and is also produced by step '${ids[0]!}'`,
      );
    }
    for (let i = 0; i < ids.length; i += 1) {
      for (let j = i + 1; j < ids.length; j += 1) {
        if (!exclusive(graph, ids[i]!, ids[j]!)) {
          problem(
            "duplicate-producer",
            `tensor '${tensor}' is produced by both step '${ids[i]!}' and step '${ids[j]!}'`,
          );
        }
      }
    }
  }

  for (const step of spec.steps) {
    if (step.kind === "model") {
      for (const [name, tensor] of Object.entries(step.inputs)) {
        if (!known(tensor)) {
          problem(
            "unknown-tensor",
            `step '${step.id}' reads tensor '${tensor}' (for input '${name}'), which is neither an operator input nor produced by any step`,
          );
        }
      }
      continue;
    }
    if (!step.input.startsWith(PARAM_PREFIX) && !known(step.input)) {
      problem(
        "unknown-tensor",
        `${step.kind} step '${step.id}' reads tensor '${step.input}', which is neither an operator input nor produced by any step`,
      );
    }
    if (step.kind === "route") {
      const seen = new Set<string>();
      for (const id of (graph.branches.get(step.id) ?? []).flat()) {
        if (seen.has(id)) continue;
        seen.add(id);
        if (id === step.id) problem("bad-branch", `route '${step.id}' names itself as a branch`);
        else if (!graph.nodes.has(id)) problem("unknown-step", `route '${step.id}' names unknown step '${id}'`);
        else if (graph.nodes.get(id)!.gate !== step.id) {
          problem(
            "bad-branch",
            `step '${id}' is a branch of both route '${graph.nodes.get(id)!.gate!}' and route '${step.id}'`,
          );
        }
      }
    } else {
      for (const [output, tensor] of Object.entries(step.outputs)) {
        if (!operatorOutputs.has(output)) {
          problem(
            "bad-exit",
            `exit '${step.id}' answers '${output}', which is not an operator output (outputs: ${listNames(operatorOutputs)})`,
          );
        } else if (!known(tensor)) {
          problem(
            "unknown-tensor",
            `exit '${step.id}' answers output '${output}' with tensor '${tensor}', which is neither an operator input nor produced by any step`,
          );
        }
      }
      for (const output of operatorOutputs) {
        if (step.outputs[output] === undefined)
          problem("bad-exit", `exit '${step.id}' does not answer operator output '${output}'`);
      }
    }
  }
  for (const output of spec.outputs) {
    if (!graph.producers.has(output.name))
      problem("unreachable-output", `operator output '${output.name}' is not produced by any step`);
  }

  const cycle = findCycle(spec, graph);
  if (cycle !== undefined) problem("cycle", cycle);
  return problems;
}

/** True when two steps sit in different cases of the same route, so at most one of them runs per request. */
function exclusive(graph: OperatorGraph, a: string, b: string): boolean {
  const gateA = graph.nodes.get(a)?.gate;
  if (gateA === undefined || gateA !== graph.nodes.get(b)?.gate) return false;
  return !(graph.branches.get(gateA) ?? []).some((list) => list.includes(a) && list.includes(b));
}

/**
 * A cycle through data edges (producer -> reader), route edges (route ->
 * branch step) and exit edges (exit -> steps listed after it), named step
 * by step; undefined when the graph is acyclic.
 */
function findCycle(spec: OperatorSpec, graph: OperatorGraph): string | undefined {
  const edges = new Map<string, Array<{ to: string; via: string }>>();
  for (const id of graph.nodes.keys()) edges.set(id, []);
  for (const node of graph.nodes.values()) {
    for (const tensor of node.reads) {
      for (const producer of graph.producers.get(tensor) ?? [])
        edges.get(producer)!.push({ to: node.step.id, via: `tensor '${tensor}'` });
    }
    if (node.gate !== undefined) edges.get(node.gate)!.push({ to: node.step.id, via: "branch" });
    for (const exit of node.guards) edges.get(exit)!.push({ to: node.step.id, via: "listed after the exit" });
  }
  const color = new Map<string, "grey" | "black">();
  const path: Array<{ id: string; via: string }> = [];
  const visit = (id: string, via: string): string | undefined => {
    color.set(id, "grey");
    path.push({ id, via });
    for (const edge of edges.get(id) ?? []) {
      const state = color.get(edge.to);
      if (state === "grey") {
        const start = path.findIndex((entry) => entry.id === edge.to);
        const loop = path.slice(start);
        const steps = loop.map((entry, i) => (i === 0 ? `'${entry.id}'` : `-(${entry.via})-> '${entry.id}'`));
        return `cycle: ${steps.join(" ")} -(${edge.via})-> '${edge.to}'`;
      }
      if (state === undefined) {
        const found = visit(edge.to, edge.via);
        if (found !== undefined) return found;
      }
    }
    path.pop();
    color.set(id, "black");
    return undefined;
  };
  for (const step of spec.steps) {
    if (color.has(step.id)) continue;
    const found = visit(step.id, "");
    if (found !== undefined) return found;
  }
  return undefined;
}

/** "'a', 'b'" or "none". */
export function listNames(names: Iterable<string>): string {
  const list = [...names].map((n) => `'${n}'`);
  return list.length > 0 ? list.join(", ") : "none";
}

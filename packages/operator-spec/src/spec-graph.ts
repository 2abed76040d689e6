import type { StepKind } from "./operator-spec-schema.js";

/**
 * An operator spec (operator-spec-schema.ts) as a graph to draw: operator inputs, model steps,
 * processing steps (routes, exits) and operator outputs as nodes; the
 * tensors between them as edges labelled with their mapping.
 *
 * It reads whatever the spec has so far (the editor draws it while it is
 * being typed) and skips what it cannot read; parseOperatorSpec and the
 * gateway's validation, not this, decide whether a spec is right.
 */
export type GraphNodeKind = "input" | StepKind | "output";

export interface SpecGraphNode {
  /** "in:<tensor>", "step:<id>" or "out:<tensor>". */
  id: string;
  kind: GraphNodeKind;
  title: string;
  detail: string;
}

export interface SpecGraphEdge {
  id: string;
  source: string;
  target: string;
  label: string;
  /** data: a tensor flows; branch: a route activates a step; answer: an exit answers an output. */
  kind: "data" | "branch" | "answer";
  /**
   * Data edges only: the ports the tensor leaves and enters by (the editor's
   * handles). Source: the operator input's tensor name or the model output's
   * name; target: the model input's name, "input" (a route or exit reads its
   * input), or the operator output's tensor name.
   */
  sourcePort?: string;
  targetPort?: string;
  /** Branch edges only: which of the route's branches (a case's index, or its default) activates the target. */
  branch?: number | "default";
}

export interface SpecGraph {
  nodes: SpecGraphNode[];
  edges: SpecGraphEdge[];
}

type Json = Record<string, unknown>;

export const inputNodeId = (tensor: string) => `in:${tensor}`;
export const stepNodeId = (id: string) => `step:${id}`;
export const outputNodeId = (tensor: string) => `out:${tensor}`;

export function specGraph(spec: unknown): SpecGraph {
  if (!isObject(spec)) return { nodes: [], edges: [] };
  const nodes: SpecGraphNode[] = [];
  const edges: SpecGraphEdge[] = [];
  const seen = new Set<string>();
  const addNode = (node: SpecGraphNode): void => {
    if (seen.has(node.id)) return;
    seen.add(node.id);
    nodes.push(node);
  };
  const addEdge = (edge: Omit<SpecGraphEdge, "id">): void => {
    if (!seen.has(edge.source) || !seen.has(edge.target)) return;
    edges.push({ ...edge, id: `e${edges.length}:${edge.source}->${edge.target}` });
  };

  const inputs = tensorList(spec["inputs"]);
  const outputs = tensorList(spec["outputs"]);
  const steps = Array.isArray(spec["steps"])
    ? spec["steps"].filter(isObject).filter((step) => typeof step["id"] === "string" && step["id"] !== "")
    : [];

  for (const tensor of inputs)
    addNode({
      id: inputNodeId(tensor.name),
      kind: "input",
      title: tensor.name,
      detail: `input · ${tensorType(tensor)}`,
    });
  for (const step of steps) addNode(stepNode(step));
  for (const tensor of outputs)
    addNode({
      id: outputNodeId(tensor.name),
      kind: "output",
      title: tensor.name,
      detail: `output · ${tensorType(tensor)}`,
    });

  // Who produces each tensor: operator inputs, and model steps under the names they publish (model output → tensor).
  const producers = new Map<string, Array<{ node: string; as: string | undefined }>>();
  const produce = (tensor: string, node: string, as: string | undefined): void =>
    void producers.set(tensor, [...(producers.get(tensor) ?? []), { node, as }]);
  for (const tensor of inputs) produce(tensor.name, inputNodeId(tensor.name), undefined);
  for (const step of steps) {
    if (step["kind"] !== "model") continue;
    for (const [modelOutput, tensor] of stringEntries(step["outputs"]))
      produce(tensor, stepNodeId(step["id"] as string), modelOutput);
  }
  const reads = (
    tensor: string,
    target: string,
    targetPort: string,
    label: (as: string | undefined) => string,
  ): void => {
    for (const producer of producers.get(tensor) ?? [])
      addEdge({
        source: producer.node,
        target,
        label: label(producer.as),
        kind: "data",
        sourcePort: producer.as ?? tensor,
        targetPort,
      });
  };

  for (const step of steps) {
    const id = stepNodeId(step["id"] as string);
    if (step["kind"] === "model") {
      for (const [modelInput, tensor] of stringEntries(step["inputs"]))
        reads(tensor, id, modelInput, () => (tensor === modelInput ? tensor : `${tensor} → ${modelInput}`));
    } else if (step["kind"] === "route" || step["kind"] === "exit") {
      if (typeof step["input"] === "string") reads(step["input"], id, "input", () => step["input"] as string);
    }
    if (step["kind"] === "route") {
      // Indexed over all cases (not only the readable ones), so that `branch` is the case's index in the spec.
      const cases = Array.isArray(step["cases"]) ? step["cases"] : [];
      cases.forEach((entry, branch) => {
        if (!isObject(entry)) return;
        for (const next of stringList(entry["next"]))
          addEdge({
            source: id,
            target: stepNodeId(next),
            label: conditionText(entry["when"]),
            kind: "branch",
            branch,
          });
      });
      for (const next of stringList(step["default"]))
        addEdge({ source: id, target: stepNodeId(next), label: "default", kind: "branch", branch: "default" });
    }
    if (step["kind"] === "exit") {
      for (const [output, tensor] of stringEntries(step["outputs"]))
        addEdge({
          source: id,
          target: outputNodeId(output),
          label: tensor === output ? `exit: ${tensor}` : `exit: ${tensor} → ${output}`,
          kind: "answer",
        });
    }
  }
  for (const tensor of outputs)
    reads(tensor.name, outputNodeId(tensor.name), tensor.name, (as) =>
      as === undefined || as === tensor.name ? tensor.name : `${as} → ${tensor.name}`,
    );
  return { nodes, edges };
}

function stepNode(step: Json): SpecGraphNode {
  const id = step["id"] as string;
  const base = { id: stepNodeId(id), title: id };
  switch (step["kind"]) {
    case "model": {
      const model = typeof step["model"] === "string" && step["model"] !== "" ? step["model"] : "?";
      const version = typeof step["version"] === "string" && step["version"] !== "" ? ` v${step["version"]}` : "";
      return { ...base, kind: "model", detail: `model ${model}${version}` };
    }
    case "route":
      return { ...base, kind: "route", detail: `route on ${typeof step["input"] === "string" ? step["input"] : "?"}` };
    case "exit":
      return {
        ...base,
        kind: "exit",
        detail: `exit when ${typeof step["input"] === "string" ? step["input"] : "?"} ${conditionText(step["when"])}`,
      };
    default:
      return { ...base, kind: "model", detail: `unknown kind ${JSON.stringify(step["kind"] ?? null)}` };
  }
}

/** "= 1", "< 0.5", "> 3". */
export function conditionText(when: unknown): string {
  if (!isObject(when)) return "?";
  if ("equals" in when) return `= ${JSON.stringify(when["equals"])}`;
  if ("lessThan" in when) return `< ${String(when["lessThan"])}`;
  if ("greaterThan" in when) return `> ${String(when["greaterThan"])}`;
  return "?";
}

interface TensorEntry {
  name: string;
  datatype: string;
  dims: unknown;
}

function tensorList(value: unknown): TensorEntry[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter(isObject)
    .filter((entry) => typeof entry["name"] === "string" && entry["name"] !== "")
    .map((entry) => ({
      name: entry["name"] as string,
      datatype: typeof entry["datatype"] === "string" ? entry["datatype"] : "?",
      dims: entry["dims"],
    }));
}

function tensorType(tensor: TensorEntry): string {
  return `${tensor.datatype} [${Array.isArray(tensor.dims) ? tensor.dims.join(",") : "?"}]`;
}

function stringEntries(value: unknown): Array<[string, string]> {
  if (!isObject(value)) return [];
  return Object.entries(value).filter(
    (entry): entry is [string, string] => typeof entry[1] === "string" && entry[1] !== "",
  );
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string" && item !== "") : [];
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

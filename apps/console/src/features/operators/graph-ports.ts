import { inputNodeId, outputNodeId, stepNodeId } from "@operon/operator-spec/spec-graph";
import { fullShape } from "@operon/operator-spec/tensor-compatibility";

/**
 * The ports the graph editor draws on each node: where a tensor can leave
 * (outputs) and enter (inputs), with the datatype and full shape (batch
 * dimension first when the owner batches) the connection checks compare.
 *
 * - An operator input "A" has one output port "A"; an operator output "Y"
 *   one input port "Y".
 * - A model step has its model's inputs and outputs (from the served model's
 *   metadata), plus any name the spec maps that the model does not have (the
 *   gateway names those as problems; the port stays so it can be removed).
 *   Without metadata (the model is not served) its ports are the names the
 *   spec maps, of unknown type.
 * - A route or exit has one input port, "input".
 */
export interface GraphPort {
  /** A model tensor's name, an operator tensor's name, or "input" (route, exit). */
  name: string;
  /** KServe datatype; null when unknown. */
  datatype: string | null;
  /** Full shape; null when unknown. */
  shape: number[] | null;
  /** The operator tensor the spec wires to it now, if any. */
  tensor: string | undefined;
}

export interface NodePorts {
  inputs: GraphPort[];
  outputs: GraphPort[];
}

/** A model's tensors as models.get lists them (shapes are full shapes there). */
export interface ModelSignature {
  inputs: ReadonlyArray<{ name: string; datatype: string | null; shape: readonly number[] }>;
  outputs: ReadonlyArray<{ name: string; datatype: string | null; shape: readonly number[] }>;
}

type Json = Record<string, unknown>;

/** Ports by graph node id (spec-graph.ts's "in:A", "step:first", "out:Y"). Reads what it can, like specGraph. */
export function graphPorts(spec: unknown, signatures: ReadonlyMap<string, ModelSignature>): Map<string, NodePorts> {
  const ports = new Map<string, NodePorts>();
  if (!isObject(spec)) return ports;
  const batch = typeof spec["maxBatchSize"] === "number" ? spec["maxBatchSize"] : 0;
  const operatorPort = (tensor: Json): GraphPort => ({
    name: tensor["name"] as string,
    datatype: typeof tensor["datatype"] === "string" ? tensor["datatype"] : null,
    shape: isDims(tensor["dims"]) ? fullShape(batch, tensor["dims"]) : null,
    tensor: tensor["name"] as string,
  });
  for (const tensor of namedList(spec["inputs"]))
    ports.set(inputNodeId(tensor["name"] as string), { inputs: [], outputs: [operatorPort(tensor)] });
  for (const tensor of namedList(spec["outputs"]))
    ports.set(outputNodeId(tensor["name"] as string), { inputs: [operatorPort(tensor)], outputs: [] });

  for (const step of namedList(spec["steps"], "id")) {
    const id = stepNodeId(step["id"] as string);
    if (ports.has(id)) continue;
    if (step["kind"] === "route" || step["kind"] === "exit") {
      const input = typeof step["input"] === "string" && step["input"] !== "" ? step["input"] : undefined;
      ports.set(id, { inputs: [{ name: "input", datatype: null, shape: null, tensor: input }], outputs: [] });
      continue;
    }
    const signature = typeof step["model"] === "string" ? signatures.get(step["model"]) : undefined;
    ports.set(id, {
      inputs: modelPorts(signature?.inputs ?? [], stringMap(step["inputs"])),
      outputs: modelPorts(signature?.outputs ?? [], stringMap(step["outputs"])),
    });
  }
  return ports;
}

/** The model's tensors in its order, then the names only the spec maps. */
function modelPorts(tensors: ModelSignature["inputs"], mapped: Map<string, string>): GraphPort[] {
  const known = tensors.map((tensor) => ({
    name: tensor.name,
    datatype: tensor.datatype,
    shape: [...tensor.shape],
    tensor: mapped.get(tensor.name),
  }));
  const names = new Set(tensors.map((tensor) => tensor.name));
  const unknown = [...mapped]
    .filter(([name]) => !names.has(name))
    .map(([name, tensor]) => ({ name, datatype: null, shape: null, tensor }));
  return [...known, ...unknown];
}

function namedList(value: unknown, key = "name"): Json[] {
  return Array.isArray(value)
    ? value.filter(isObject).filter((entry) => typeof entry[key] === "string" && entry[key] !== "")
    : [];
}

function stringMap(value: unknown): Map<string, string> {
  if (!isObject(value)) return new Map();
  return new Map(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === "string" && entry[1] !== ""),
  );
}

function isDims(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((dim) => Number.isInteger(dim));
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

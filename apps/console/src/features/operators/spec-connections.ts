import type { GraphPort } from "./graph-ports";
import { tensorMismatch, type TensorMismatch } from "@operon/operator-spec/tensor-compatibility";

/**
 * The graph editor's two edits, made on the operator spec itself (the same
 * object the JSON editor and the palette change: one source of truth).
 * Steps exchange tensors by name, so a connection is a tensor name written
 * on both ends:
 *
 * - operator input "A" → step input "INPUT0": the step maps INPUT0 to "A";
 * - step output "OUTPUT0" → step input: the consumer maps its input to the
 *   tensor the producer publishes OUTPUT0 as (a fresh name, "<step>_OUTPUT0",
 *   when it publishes none yet);
 * - step output → operator output "Y": the producer publishes OUTPUT0 as "Y"
 *   (the steps that read its old name now read "Y"), and no other step
 *   publishes "Y" any more.
 *
 * An input port holds one connection: connecting it again replaces the old
 * one. Whether the two ends agree is the gateway's check (and
 * portMismatch's, for instant feedback); these edits never refuse a
 * mismatch, so it can be shown on the edge and fixed there.
 */

/** One end of a connection: a graph node id (spec-graph.ts) and a port name (graph-ports.ts). */
export interface PortRef {
  node: string;
  port: string;
}

export type SpecEdit = { ok: true; spec: Record<string, unknown> } | { ok: false; message: string };

/** What the graph editor learns of an edit it asked for: done, or why not. */
export type EditOutcome = { ok: true } | { ok: false; message: string };

type Json = Record<string, unknown>;

export function connectPorts(spec: Record<string, unknown>, from: PortRef, to: PortRef): SpecEdit {
  const next = structuredClone(spec);
  const steps = stepList(next);
  const source = parseNode(from.node);
  const target = parseNode(to.node);

  let tensor: string;
  let producer: Json | undefined;
  if (source.kind === "in") {
    if (!tensorNames(next["inputs"]).includes(source.name))
      return fail(`the spec has no operator input '${source.name}'`);
    tensor = source.name;
  } else if (source.kind === "step") {
    producer = steps.find((step) => step["id"] === source.name);
    if (producer === undefined) return fail(`the spec has no step '${source.name}'`);
    if (producer["kind"] !== "model")
      return fail(`step '${source.name}' is a ${String(producer["kind"])}: only model steps have outputs to connect`);
    const outputs = mapOf(producer, "outputs");
    tensor = outputs[from.port] ?? freshTensorName(next, `${source.name}_${from.port}`);
    outputs[from.port] = tensor;
  } else {
    return fail(`a connection starts at an operator input or a step's output, not at ${describe(from)}`);
  }

  if (target.kind === "step") {
    const consumer = steps.find((step) => step["id"] === target.name);
    if (consumer === undefined) return fail(`the spec has no step '${target.name}'`);
    if (consumer === producer) return fail(`step '${target.name}' cannot read its own output`);
    if (consumer["kind"] === "model") mapOf(consumer, "inputs")[to.port] = tensor;
    else if (to.port === "input") consumer["input"] = tensor;
    else return fail(`${consumer["kind"]} '${target.name}' has one input port, "input", not '${to.port}'`);
    return { ok: true, spec: next };
  }
  if (target.kind === "out") {
    if (!tensorNames(next["outputs"]).includes(target.name))
      return fail(`the spec has no operator output '${target.name}'`);
    if (producer === undefined)
      return fail(
        `operator input '${source.name}' cannot answer operator output '${target.name}' directly: connect it through a step`,
      );
    // The output's previous producers give it up; whoever read it now reads the new producer's tensor.
    for (const step of steps) {
      if (step["kind"] !== "model") continue;
      const outputs = mapOf(step, "outputs");
      for (const [port, name] of Object.entries(outputs))
        if (name === target.name && !(step === producer && port === from.port)) delete outputs[port];
    }
    renameReads(steps, tensor, target.name);
    mapOf(producer, "outputs")[from.port] = target.name;
    return { ok: true, spec: next };
  }
  return fail(`a connection ends at a step's input or an operator output, not at ${describe(to)}`);
}

/** Removes the connection into an input port (a step's input, or an operator output). */
export function disconnectPort(spec: Record<string, unknown>, to: PortRef): SpecEdit {
  const next = structuredClone(spec);
  const steps = stepList(next);
  const target = parseNode(to.node);
  if (target.kind === "step") {
    const consumer = steps.find((step) => step["id"] === target.name);
    if (consumer === undefined) return fail(`the spec has no step '${target.name}'`);
    if (consumer["kind"] !== "model") {
      if (to.port !== "input" || typeof consumer["input"] !== "string") return fail(`${describe(to)} is not connected`);
      delete consumer["input"];
      return { ok: true, spec: next };
    }
    const inputs = mapOf(consumer, "inputs");
    if (inputs[to.port] === undefined) return fail(`${describe(to)} is not connected`);
    delete inputs[to.port];
    return { ok: true, spec: next };
  }
  if (target.kind === "out") {
    const producers = steps.filter(
      (step) => step["kind"] === "model" && Object.values(mapOf(step, "outputs")).includes(target.name),
    );
    if (producers.length === 0) return fail(`no step's output is connected to operator output '${target.name}'`);
    // The producer keeps publishing its output (a model step must map one), under a fresh name its readers follow.
    for (const step of producers) {
      const outputs = mapOf(step, "outputs");
      for (const [port, name] of Object.entries(outputs)) {
        if (name !== target.name) continue;
        const fresh = freshTensorName(next, `${String(step["id"])}_${port}`);
        outputs[port] = fresh;
        renameReads(steps, target.name, fresh);
      }
    }
    return { ok: true, spec: next };
  }
  return fail(`only a step's input or an operator output has a connection to remove, not ${describe(to)}`);
}

/** Whether the producer's port fits the consumer's, by the gateway's rule (tensor-compatibility.ts); undefined when they fit or a type is unknown. */
export function portMismatch(from: GraphPort, to: GraphPort): TensorMismatch | undefined {
  if (from.datatype === null || to.datatype === null || from.shape === null || to.shape === null) return undefined;
  return tensorMismatch({ datatype: from.datatype, shape: from.shape }, { datatype: to.datatype, shape: to.shape });
}

/** "step 'first' output 'OUTPUT0'", "operator input 'A'": how messages name a port. */
export function describe(ref: PortRef): string {
  const node = parseNode(ref.node);
  if (node.kind === "in") return `operator input '${node.name}'`;
  if (node.kind === "out") return `operator output '${node.name}'`;
  if (node.kind === "step") return `step '${node.name}' port '${ref.port}'`;
  return `'${ref.node}'`;
}

/** "first · OUTPUT0", "A": how the graph editor names a port to people. */
export function portText(ref: PortRef): string {
  const node = parseNode(ref.node);
  return node.kind === "step" ? `${node.name} · ${ref.port}` : node.name;
}

type ParsedNode = { kind: "in" | "out" | "step"; name: string } | { kind: "unknown"; name: string };

function parseNode(id: string): ParsedNode {
  const match = /^(in|out|step):(.+)$/s.exec(id);
  return match === null ? { kind: "unknown", name: id } : { kind: match[1] as "in" | "out" | "step", name: match[2]! };
}

function fail(message: string): SpecEdit {
  return { ok: false, message };
}

function stepList(spec: Json): Json[] {
  return Array.isArray(spec["steps"]) ? spec["steps"].filter(isObject) : [];
}

/** The step's name → tensor map, created when missing (so edits write into the spec object). */
function mapOf(step: Json, key: "inputs" | "outputs"): Record<string, string> {
  if (!isObject(step[key])) step[key] = {};
  return step[key] as Record<string, string>;
}

/** The tensors a step reads: a model's mapped inputs, a route's or exit's input, the tensors an exit answers with. */
function readsOf(step: Json): string[] {
  if (step["kind"] === "model") return Object.values(isObject(step["inputs"]) ? step["inputs"] : {}).map(String);
  const reads = typeof step["input"] === "string" ? [step["input"]] : [];
  if (step["kind"] === "exit" && isObject(step["outputs"])) reads.push(...Object.values(step["outputs"]).map(String));
  return reads;
}

function renameReads(steps: Json[], from: string, to: string): void {
  if (from === to) return;
  for (const step of steps) {
    if (step["kind"] === "model" || step["kind"] === "exit") {
      const key = step["kind"] === "model" ? "inputs" : "outputs";
      if (isObject(step[key]))
        for (const [port, name] of Object.entries(step[key])) if (name === from) step[key][port] = to;
    }
    if (step["kind"] !== "model" && step["input"] === from) step["input"] = to;
  }
}

/** `base`, or `base_2`, `base_3`… when the spec already uses it as a tensor name. */
function freshTensorName(spec: Json, base: string): string {
  const taken = new Set([...tensorNames(spec["inputs"]), ...tensorNames(spec["outputs"])]);
  for (const step of stepList(spec)) {
    for (const name of readsOf(step)) taken.add(name);
    if (isObject(step["outputs"])) for (const name of Object.values(step["outputs"])) taken.add(String(name));
  }
  let name = base;
  for (let n = 2; taken.has(name); n += 1) name = `${base}_${n}`;
  return name;
}

function tensorNames(list: unknown): string[] {
  return Array.isArray(list)
    ? list.filter(isObject).flatMap((tensor) => (typeof tensor["name"] === "string" ? [tensor["name"]] : []))
    : [];
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

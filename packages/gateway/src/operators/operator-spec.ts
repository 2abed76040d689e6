import { isDataType, toConfigDataType, type DataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import type { ServedModelSignature, ServedTensorConfig } from "../engine/request-validation.js";

/**
 * An operator: a DAG of model calls, conditional routes and early exits,
 * served like a model. Steps exchange tensors by name through a whiteboard
 * (Triton ensembles' semantics): a step reads operator inputs or tensors
 * other steps produce, and names the tensors it produces.
 *
 * Control flow, on top of the data flow:
 * - A `route` evaluates the first element of a tensor (or a request
 *   parameter, `"$param.<name>"`) and activates the steps of the first case
 *   that matches (else `default`). Steps named in a route's cases run only
 *   when activated; the others are skipped, and so is every step that reads
 *   a tensor only skipped steps would produce.
 * - An `exit` evaluates its condition as soon as its tensors are ready; when
 *   it holds, the operator answers with the exit's tensors at once and
 *   cancels the rest. Steps listed after an exit in `steps` start only once
 *   that exit has decided not to exit, so an exit placed early keeps the
 *   expensive steps behind it from starting.
 *
 * Two steps may produce the same tensor only when they sit in different
 * cases of one route (at most one of them runs).
 *
 * Tensor dims follow model configs: when `maxBatchSize` > 0 they exclude the
 * batch dimension, which operator inputs carry first and pass through as
 * sent. -1 is any size.
 */
export interface TensorSpec {
  name: string;
  /** Wire datatype name, e.g. "FP32", "BYTES". */
  datatype: DataType;
  dims: number[];
  optional?: boolean;
}

/** Exactly one comparison. Values compare with the tensor's first element (BYTES: as a UTF-8 string; BOOL: as 0/1). */
export type Condition = { equals: number | string | boolean } | { lessThan: number } | { greaterThan: number };

export interface ModelStepSpec {
  id: string;
  kind: "model";
  model: string;
  /** Version to call; undefined = the model's latest ready version. */
  version?: string;
  /** Model input name -> tensor name (an operator input or another step's output). */
  inputs: Record<string, string>;
  /** Model output name -> tensor name it is published under. */
  outputs: Record<string, string>;
  /** Requests this step runs at once across all requests of the operator (0 = unlimited; default: the operator's). */
  maxInflight?: number;
}

export interface RouteCase {
  when: Condition;
  /** Step ids this case activates. */
  next: string[];
}

export interface RouteStepSpec {
  id: string;
  kind: "route";
  /** Tensor name, or "$param.<name>" for a request parameter. */
  input: string;
  cases: RouteCase[];
  /** Step ids activated when no case matches; without it, no match fails the request. */
  default?: string[];
}

export interface ExitStepSpec {
  id: string;
  kind: "exit";
  /** Tensor name, or "$param.<name>" for a request parameter. */
  input: string;
  when: Condition;
  /** Operator output name -> tensor name answered when the exit fires; covers every operator output. */
  outputs: Record<string, string>;
}

export type StepSpec = ModelStepSpec | RouteStepSpec | ExitStepSpec;

export interface OperatorSpec {
  name: string;
  description?: string;
  /** As a model config's max_batch_size: > 0 means tensors carry a batch dimension not written in dims. Default 0. */
  maxBatchSize?: number;
  /** Default in-flight cap of every model step (0 = unlimited). */
  maxInflightPerStep?: number;
  inputs: TensorSpec[];
  outputs: TensorSpec[];
  steps: StepSpec[];
}

export const PARAM_PREFIX = "$param.";

/** The served signature of a model (or operator) version; undefined when it is not served. */
export type ModelSignatureLookup = (model: string, version: string | undefined) => ServedModelSignature | undefined;

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

// ---------------------------------------------------------------------------
// Parsing: JSON (unknown) -> OperatorSpec, with every structural problem named

/**
 * Checks the JSON shape of a spec (types, required fields, unique names and
 * ids, conditions with exactly one comparison) and returns it typed. Throws
 * INVALID_ARG listing every problem found.
 */
export function parseOperatorSpec(value: unknown): OperatorSpec {
  const problems: string[] = [];
  const fail = (path: string, message: string): void => void problems.push(`${path}: ${message}`);
  if (!isRecord(value)) throw new OperonError("INVALID_ARG", "an operator spec must be a JSON object");
  const name = value["name"];
  if (typeof name !== "string" || name === "" || /[/\\\0]/.test(name) || name === "." || name === "..") {
    fail("name", "must be a non-empty string usable as a model name");
  }
  if (value["description"] !== undefined && typeof value["description"] !== "string") fail("description", "must be a string");
  for (const key of ["maxBatchSize", "maxInflightPerStep"]) {
    const n = value[key];
    if (n !== undefined && !(Number.isInteger(n) && (n as number) >= 0)) fail(key, `must be an integer >= 0, got ${JSON.stringify(n)}`);
  }
  const inputs = parseTensors(value["inputs"], "inputs", fail);
  const outputs = parseTensors(value["outputs"], "outputs", fail);
  const steps: StepSpec[] = [];
  if (!Array.isArray(value["steps"]) || value["steps"].length === 0) {
    fail("steps", "must be a non-empty array");
  } else {
    const ids = new Set<string>();
    value["steps"].forEach((raw: unknown, index: number) => {
      const step = parseStep(raw, `steps[${index}]`, fail);
      if (step === undefined) return;
      if (ids.has(step.id)) fail(`steps[${index}]`, `step id '${step.id}' is used more than once`);
      ids.add(step.id);
      steps.push(step);
    });
  }
  if (problems.length > 0) {
    throw new OperonError("INVALID_ARG", `invalid operator spec${typeof name === "string" && name ? ` '${name}'` : ""}: ${problems.join("; ")}`);
  }
  const spec: OperatorSpec = { name: name as string, inputs, outputs, steps };
  if (typeof value["description"] === "string") spec.description = value["description"];
  if (value["maxBatchSize"] !== undefined) spec.maxBatchSize = value["maxBatchSize"] as number;
  if (value["maxInflightPerStep"] !== undefined) spec.maxInflightPerStep = value["maxInflightPerStep"] as number;
  return spec;
}

function parseTensors(value: unknown, path: string, fail: (path: string, message: string) => void): TensorSpec[] {
  if (!Array.isArray(value) || value.length === 0) {
    fail(path, "must be a non-empty array of { name, datatype, dims }");
    return [];
  }
  const names = new Set<string>();
  const tensors: TensorSpec[] = [];
  value.forEach((raw: unknown, index: number) => {
    const at = `${path}[${index}]`;
    if (!isRecord(raw)) return fail(at, "must be an object { name, datatype, dims }");
    const { name, datatype, dims, optional } = raw;
    if (typeof name !== "string" || name === "") return fail(at, "name must be a non-empty string");
    if (names.has(name)) fail(at, `tensor name '${name}' is used more than once`);
    names.add(name);
    if (typeof datatype !== "string" || !isDataType(datatype)) {
      return fail(at, `'${name}': datatype must be one of the KServe datatypes (FP32, INT64, BYTES, ...), got ${JSON.stringify(datatype)}`);
    }
    if (!Array.isArray(dims) || !dims.every((dim) => Number.isInteger(dim) && (dim as number) >= -1)) {
      return fail(at, `'${name}': dims must be an array of integers >= -1`);
    }
    if (optional !== undefined && typeof optional !== "boolean") return fail(at, `'${name}': optional must be a boolean`);
    const tensor: TensorSpec = { name, datatype, dims: dims as number[] };
    if (optional === true) tensor.optional = true;
    tensors.push(tensor);
  });
  return tensors;
}

function parseStep(raw: unknown, at: string, fail: (path: string, message: string) => void): StepSpec | undefined {
  if (!isRecord(raw)) {
    fail(at, "a step must be an object");
    return undefined;
  }
  const { id, kind } = raw;
  if (typeof id !== "string" || id === "") {
    fail(at, "id must be a non-empty string");
    return undefined;
  }
  const where = `step '${id}'`;
  switch (kind) {
    case "model": {
      const { model, version, maxInflight } = raw;
      let ok = true;
      if (typeof model !== "string" || model === "") ok = fails(fail, where, "model must be a non-empty string");
      if (version !== undefined && typeof version !== "string") ok = fails(fail, where, "version must be a string (e.g. \"1\")");
      if (maxInflight !== undefined && !(Number.isInteger(maxInflight) && (maxInflight as number) >= 0)) {
        ok = fails(fail, where, "maxInflight must be an integer >= 0");
      }
      const inputs = stringMap(raw["inputs"], `${where}: inputs`, fail);
      const outputs = stringMap(raw["outputs"], `${where}: outputs`, fail);
      if (outputs !== undefined && Object.keys(outputs).length === 0) ok = fails(fail, where, "outputs must map at least one model output");
      if (!ok || inputs === undefined || outputs === undefined) return undefined;
      const step: ModelStepSpec = { id, kind, model: model as string, inputs, outputs };
      if (typeof version === "string" && version !== "") step.version = version;
      if (maxInflight !== undefined) step.maxInflight = maxInflight as number;
      return step;
    }
    case "route": {
      const input = raw["input"];
      let ok = true;
      if (typeof input !== "string" || input === "") ok = fails(fail, where, "input must be a tensor name or \"$param.<name>\"");
      const cases: RouteCase[] = [];
      if (!Array.isArray(raw["cases"])) {
        ok = fails(fail, where, "cases must be an array of { when, next }");
      } else {
        raw["cases"].forEach((c: unknown, index: number) => {
          if (!isRecord(c)) return void (ok = fails(fail, where, `cases[${index}] must be an object { when, next }`));
          const when = parseCondition(c["when"], `${where}: cases[${index}].when`, fail);
          const next = stepList(c["next"], `${where}: cases[${index}].next`, fail);
          if (when === undefined || next === undefined) ok = false;
          else cases.push({ when, next });
        });
      }
      const fallback = raw["default"] === undefined ? undefined : stepList(raw["default"], `${where}: default`, fail);
      if (raw["default"] !== undefined && fallback === undefined) ok = false;
      if (Array.isArray(raw["cases"]) && raw["cases"].length === 0 && fallback === undefined) {
        ok = fails(fail, where, "a route needs at least one case or a default");
      }
      if (!ok) return undefined;
      const step: RouteStepSpec = { id, kind, input: input as string, cases };
      if (fallback !== undefined) step.default = fallback;
      return step;
    }
    case "exit": {
      const input = raw["input"];
      let ok = true;
      if (typeof input !== "string" || input === "") ok = fails(fail, where, "input must be a tensor name or \"$param.<name>\"");
      const when = parseCondition(raw["when"], `${where}: when`, fail);
      const outputs = stringMap(raw["outputs"], `${where}: outputs`, fail);
      if (!ok || when === undefined || outputs === undefined) return undefined;
      return { id, kind, input: input as string, when, outputs };
    }
    default:
      fail(where, `kind must be "model", "route" or "exit", got ${JSON.stringify(kind)}`);
      return undefined;
  }
}

function fails(fail: (path: string, message: string) => void, path: string, message: string): false {
  fail(path, message);
  return false;
}

function parseCondition(value: unknown, at: string, fail: (path: string, message: string) => void): Condition | undefined {
  if (!isRecord(value)) {
    fail(at, "must be an object with exactly one of equals, lessThan, greaterThan");
    return undefined;
  }
  const keys = Object.keys(value);
  if (keys.length !== 1 || !["equals", "lessThan", "greaterThan"].includes(keys[0]!)) {
    fail(at, `must have exactly one of equals, lessThan, greaterThan; got ${keys.length > 0 ? keys.join(", ") : "none"}`);
    return undefined;
  }
  const key = keys[0]!;
  const operand = value[key];
  if (key === "equals") {
    if (typeof operand !== "number" && typeof operand !== "string" && typeof operand !== "boolean") {
      fail(at, "equals must be a number, string or boolean");
      return undefined;
    }
    return { equals: operand };
  }
  if (typeof operand !== "number" || !Number.isFinite(operand)) {
    fail(at, `${key} must be a finite number`);
    return undefined;
  }
  return key === "lessThan" ? { lessThan: operand } : { greaterThan: operand };
}

function stringMap(value: unknown, at: string, fail: (path: string, message: string) => void): Record<string, string> | undefined {
  if (!isRecord(value) || !Object.values(value).every((v) => typeof v === "string" && v !== "")) {
    fail(at, "must be an object of name -> tensor name (non-empty strings)");
    return undefined;
  }
  return { ...(value as Record<string, string>) };
}

function stepList(value: unknown, at: string, fail: (path: string, message: string) => void): string[] | undefined {
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string" && v !== "")) {
    fail(at, "must be an array of step ids");
    return undefined;
  }
  return [...(value as string[])];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * The model config a registered operator is served with (config endpoint,
 * metadata, request validation): platform "operator", its inputs and
 * outputs, and the spec itself as the `operator_spec` parameter (JSON), so
 * gRPC's ModelConfig carries it too.
 */
export function operatorModelConfig(spec: OperatorSpec): ModelConfigJson {
  const tensor = (t: TensorSpec) => ({ name: t.name, data_type: toConfigDataType(t.datatype), dims: [...t.dims] });
  return {
    name: spec.name,
    platform: "operator",
    backend: "",
    max_batch_size: spec.maxBatchSize ?? 0,
    input: spec.inputs.map((t) => ({ ...tensor(t), optional: t.optional ?? false })),
    output: spec.outputs.map(tensor),
    parameters: {
      operator_spec: { string_value: JSON.stringify(spec) },
      ...(spec.description !== undefined ? { description: { string_value: spec.description } } : {}),
    },
  };
}

// ---------------------------------------------------------------------------
// Analysis shared by the validator and the executor

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

// ---------------------------------------------------------------------------
// Validation against the served models

/**
 * Every problem of a (parsed) spec against the models served now: unknown
 * models and model tensors, unmapped model inputs, unknown tensors, tensors
 * produced twice, datatype/shape mismatches on each edge, batch sizes,
 * cycles (named), outputs no step produces, branches naming unknown steps,
 * exits that do not answer every output. Empty = valid.
 */
export function validateOperator(spec: OperatorSpec, lookup: ModelSignatureLookup): OperatorProblem[] {
  const problems: OperatorProblem[] = [];
  const problem = (code: OperatorProblemCode, message: string): void => void problems.push({ code, message });
  const graph = analyzeOperator(spec);
  const operatorBatch = spec.maxBatchSize ?? 0;
  const operatorInputs = new Map(spec.inputs.map((t) => [t.name, t]));
  const operatorOutputs = new Map(spec.outputs.map((t) => [t.name, t]));

  // Where each tensor comes from, with its type (when known), for the edge checks.
  interface End {
    describe: string;
    datatype: DataType;
    shape: number[];
  }
  const sources = new Map<string, End[]>();
  const addSource = (tensor: string, end: End): void => void sources.set(tensor, [...(sources.get(tensor) ?? []), end]);
  for (const input of spec.inputs) {
    addSource(input.name, { describe: `operator input '${input.name}'`, datatype: input.datatype, shape: fullShape(operatorBatch, input.dims) });
  }

  const signatures = new Map<string, ServedModelSignature>();
  for (const step of spec.steps) {
    if (step.kind !== "model") continue;
    const signature = lookup(step.model, step.version);
    if (signature === undefined) {
      problem("unknown-model", `step '${step.id}': model '${step.model}'${step.version !== undefined ? ` version ${step.version}` : ""} is not served (load it first)`);
      continue;
    }
    signatures.set(step.id, signature);
    if (operatorBatch > 0 && signature.maxBatchSize > 0 && operatorBatch > signature.maxBatchSize) {
      problem(
        "batch-size",
        `step '${step.id}': the operator allows batch size ${operatorBatch}, but model '${step.model}' only ${signature.maxBatchSize} (max_batch_size)`,
      );
    }
    const modelInputs = new Map(signature.inputs.map((t) => [t.name, t]));
    const modelOutputs = new Map(signature.outputs.map((t) => [t.name, t]));
    for (const name of Object.keys(step.inputs)) {
      if (!modelInputs.has(name)) {
        problem("unknown-model-tensor", `step '${step.id}': model '${step.model}' has no input '${name}' (its inputs: ${listNames(modelInputs.keys())})`);
      }
    }
    for (const input of signature.inputs) {
      if (!input.optional && step.inputs[input.name] === undefined) {
        problem("unmapped-model-input", `step '${step.id}': required input '${input.name}' of model '${step.model}' is not mapped to a tensor`);
      }
    }
    for (const [name, tensor] of Object.entries(step.outputs)) {
      const output = modelOutputs.get(name);
      if (output === undefined) {
        problem("unknown-model-tensor", `step '${step.id}': model '${step.model}' has no output '${name}' (its outputs: ${listNames(modelOutputs.keys())})`);
        continue;
      }
      addSource(tensor, {
        describe: `step '${step.id}' (output '${name}' of model '${step.model}')`,
        datatype: output.datatype,
        shape: modelShape(signature, output),
      });
    }
  }

  // Tensors produced twice: by two steps (unless they are in different cases of one route), or a step and the request.
  for (const [tensor, ids] of graph.producers) {
    if (operatorInputs.has(tensor)) {
      problem("duplicate-producer", `tensor '${tensor}' is an operator input and is also produced by step '${ids[0]!}'`);
    }
    for (let i = 0; i < ids.length; i += 1) {
      for (let j = i + 1; j < ids.length; j += 1) {
        if (!exclusive(graph, ids[i]!, ids[j]!)) {
          problem("duplicate-producer", `tensor '${tensor}' is produced by both step '${ids[i]!}' and step '${ids[j]!}'`);
        }
      }
    }
  }

  // Every tensor read must exist; connected ends must agree on datatype and shape.
  const checkEdge = (tensor: string, consumer: string, datatype: DataType | undefined, shape: number[] | undefined): void => {
    for (const source of sources.get(tensor) ?? []) {
      if (datatype !== undefined && source.datatype !== datatype) {
        problem("type-mismatch", `tensor '${tensor}' from ${source.describe} to ${consumer}: datatype ${source.datatype} does not match ${datatype}`);
      } else if (shape !== undefined && !shapesCompatible(source.shape, shape)) {
        problem("shape-mismatch", `tensor '${tensor}' from ${source.describe} to ${consumer}: shape ${formatShape(source.shape)} does not match ${formatShape(shape)}`);
      }
    }
  };
  const known = (tensor: string): boolean => operatorInputs.has(tensor) || graph.producers.has(tensor);
  for (const step of spec.steps) {
    if (step.kind === "model") {
      const signature = signatures.get(step.id);
      for (const [name, tensor] of Object.entries(step.inputs)) {
        if (!known(tensor)) {
          problem("unknown-tensor", `step '${step.id}' reads tensor '${tensor}' (for input '${name}'), which is neither an operator input nor produced by any step`);
          continue;
        }
        const input = signature?.inputs.find((t) => t.name === name);
        if (signature !== undefined && input !== undefined) {
          checkEdge(tensor, `step '${step.id}' (input '${name}' of model '${step.model}')`, input.datatype, modelShape(signature, input));
        }
      }
      continue;
    }
    if (!step.input.startsWith(PARAM_PREFIX) && !known(step.input)) {
      problem("unknown-tensor", `${step.kind} step '${step.id}' reads tensor '${step.input}', which is neither an operator input nor produced by any step`);
    }
    if (step.kind === "route") {
      const seen = new Set<string>();
      for (const id of (graph.branches.get(step.id) ?? []).flat()) {
        if (seen.has(id)) continue;
        seen.add(id);
        if (id === step.id) problem("bad-branch", `route '${step.id}' names itself as a branch`);
        else if (!graph.nodes.has(id)) problem("unknown-step", `route '${step.id}' names unknown step '${id}'`);
        else if (graph.nodes.get(id)!.gate !== step.id) {
          problem("bad-branch", `step '${id}' is a branch of both route '${graph.nodes.get(id)!.gate!}' and route '${step.id}'`);
        }
      }
    } else {
      for (const [output, tensor] of Object.entries(step.outputs)) {
        const declared = operatorOutputs.get(output);
        if (declared === undefined) {
          problem("bad-exit", `exit '${step.id}' answers '${output}', which is not an operator output (outputs: ${listNames(operatorOutputs.keys())})`);
        } else if (!known(tensor)) {
          problem("unknown-tensor", `exit '${step.id}' answers output '${output}' with tensor '${tensor}', which is neither an operator input nor produced by any step`);
        } else {
          checkEdge(tensor, `operator output '${output}' (exit '${step.id}')`, declared.datatype, fullShape(operatorBatch, declared.dims));
        }
      }
      for (const output of operatorOutputs.keys()) {
        if (step.outputs[output] === undefined) problem("bad-exit", `exit '${step.id}' does not answer operator output '${output}'`);
      }
    }
  }
  for (const output of spec.outputs) {
    if (!graph.producers.has(output.name)) {
      problem("unreachable-output", `operator output '${output.name}' is not produced by any step`);
    } else {
      checkEdge(output.name, `operator output '${output.name}'`, output.datatype, fullShape(operatorBatch, output.dims));
    }
  }

  const cycle = findCycle(spec, graph);
  if (cycle !== undefined) problem("cycle", cycle);
  return problems;
}

/** Throws when the spec has problems: INVALID_ARG, or UNAVAILABLE when the only problem is models not served yet. */
export function assertValidOperator(spec: OperatorSpec, lookup: ModelSignatureLookup, what = `operator '${spec.name}'`): void {
  const problems = validateOperator(spec, lookup);
  if (problems.length === 0) return;
  const notYet = problems.every((p) => p.code === "unknown-model");
  const list = problems.map((p) => p.message).join("; ");
  throw notYet
    ? new OperonError("UNAVAILABLE", `${what} cannot be served yet: ${list}`)
    : new OperonError("INVALID_ARG", `${what} is invalid: ${list}`);
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
      for (const producer of graph.producers.get(tensor) ?? []) edges.get(producer)!.push({ to: node.step.id, via: `tensor '${tensor}'` });
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

function fullShape(maxBatchSize: number, dims: number[]): number[] {
  return maxBatchSize > 0 ? [-1, ...dims] : [...dims];
}

function modelShape(signature: ServedModelSignature, tensor: ServedTensorConfig): number[] {
  return fullShape(signature.maxBatchSize, tensor.dims);
}

function shapesCompatible(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((dim, i) => dim === -1 || b[i] === -1 || dim === b[i]);
}

function formatShape(shape: number[]): string {
  return `[${shape.join(",")}]`;
}

function listNames(names: Iterable<string>): string {
  const list = [...names].map((n) => `'${n}'`);
  return list.length > 0 ? list.join(", ") : "none";
}

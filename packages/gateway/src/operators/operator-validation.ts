import { toConfigDataType, type DataType } from "@operon/protocol/datatypes";
import { OperonError } from "@operon/protocol/errors";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import type { ModelStepSpec, OperatorSpec, TensorSpec } from "@operon/operator-spec/operator-spec-schema";
import {
  analyzeOperator,
  isKnownTensor,
  listNames,
  structuralProblems,
  type OperatorProblem,
  type OperatorProblemCode,
} from "@operon/operator-spec/operator-structure";
import { fullShape, tensorMismatch } from "@operon/operator-spec/tensor-compatibility";
import type { VersionRunner } from "../scheduling/version-runner.js";
import type { ServedModelSignature, ServedTensorConfig } from "../signature/model-signature.js";

/**
 * An operator's checks against the models this gateway serves. The spec
 * format, its parser and the checks that need no model live in
 * @operon/operator-spec.
 */

/** The served signature of a model (or operator) version; undefined when it is not served. */
export type ModelSignatureLookup = (model: string, version: string | undefined) => ServedModelSignature | undefined;

/** How the model loader serves ensembles (repository/model-loader.ts); without it they are UNSUPPORTED. */
export interface OperatorHooks {
  /** Signatures of the models served now. */
  lookup: ModelSignatureLookup;
  /** Builds the runner of an operator (throws when the operator may not be served, e.g. it would call itself). */
  createRunner(spec: OperatorSpec): VersionRunner;
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
// Validation against the served models

/**
 * Every problem of a (parsed) spec against the models served now: unknown
 * models and model tensors, unmapped model inputs, batch sizes and
 * datatype/shape mismatches on each edge, after the problems that need no
 * model (structuralProblems: unknown tensors, tensors produced twice,
 * cycles, unreachable outputs, bad branches and exits). Empty = valid.
 */
export function validateOperator(spec: OperatorSpec, lookup: ModelSignatureLookup): OperatorProblem[] {
  const problems: OperatorProblem[] = [];
  const problem = (code: OperatorProblemCode, message: string): void => void problems.push({ code, message });
  const graph = analyzeOperator(spec);
  const operatorBatch = spec.maxBatchSize ?? 0;
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
    addSource(input.name, {
      describe: `operator input '${input.name}'`,
      datatype: input.datatype,
      shape: fullShape(operatorBatch, input.dims),
    });
  }

  const signatures = new Map<string, ServedModelSignature>();
  for (const step of spec.steps) {
    if (step.kind !== "model") continue;
    const signature = lookup(step.model, step.version);
    if (signature === undefined) {
      problem(
        "unknown-model",
        `step '${step.id}': model '${step.model}'${step.version !== undefined ? ` version ${step.version}` : ""} is not served (load it first)`,
      );
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
        problem(
          "unknown-model-tensor",
          `step '${step.id}': model '${step.model}' has no input '${name}' (its inputs: ${listNames(modelInputs.keys())})`,
        );
      }
    }
    for (const input of signature.inputs) {
      if (!input.optional && step.inputs[input.name] === undefined) {
        problem(
          "unmapped-model-input",
          `step '${step.id}': required input '${input.name}' of model '${step.model}' is not mapped to a tensor`,
        );
      }
    }
    for (const [name, tensor] of Object.entries(step.outputs)) {
      const output = modelOutputs.get(name);
      if (output === undefined) {
        problem(
          "unknown-model-tensor",
          `step '${step.id}': model '${step.model}' has no output '${name}' (its outputs: ${listNames(modelOutputs.keys())})`,
        );
        continue;
      }
      addSource(tensor, {
        describe: `step '${step.id}' (output '${name}' of model '${step.model}')`,
        datatype: output.datatype,
        shape: modelShape(signature, output),
      });
    }
  }

  for (const step of spec.steps)
    if (step.kind === "model" && step.fallback !== undefined)
      checkFallback(step, signatures.get(step.id), lookup, problem);

  problems.push(...structuralProblems(spec, graph));

  // Connected ends must agree on datatype and shape (tensors nobody produces are reported above).
  const checkEdge = (tensor: string, consumer: string, datatype: DataType, shape: number[]): void => {
    for (const source of sources.get(tensor) ?? []) {
      const mismatch = tensorMismatch(source, { datatype, shape });
      if (mismatch === undefined) continue;
      problem(
        mismatch.what === "datatype" ? "type-mismatch" : "shape-mismatch",
        `tensor '${tensor}' from ${source.describe} to ${consumer}: ${mismatch.what} ${mismatch.given} does not match ${mismatch.expected}`,
      );
    }
  };
  const known = (tensor: string): boolean => isKnownTensor(spec, graph, tensor);
  for (const step of spec.steps) {
    if (step.kind === "model") {
      const signature = signatures.get(step.id);
      if (signature === undefined) continue;
      for (const [name, tensor] of Object.entries(step.inputs)) {
        const input = signature.inputs.find((t) => t.name === name);
        if (input !== undefined && known(tensor)) {
          checkEdge(
            tensor,
            `step '${step.id}' (input '${name}' of model '${step.model}')`,
            input.datatype,
            modelShape(signature, input),
          );
        }
      }
    } else if (step.kind === "exit") {
      for (const [output, tensor] of Object.entries(step.outputs)) {
        const declared = operatorOutputs.get(output);
        if (declared !== undefined && known(tensor)) {
          checkEdge(
            tensor,
            `operator output '${output}' (exit '${step.id}')`,
            declared.datatype,
            fullShape(operatorBatch, declared.dims),
          );
        }
      }
    }
  }
  for (const output of spec.outputs) {
    if (graph.producers.has(output.name))
      checkEdge(
        output.name,
        `operator output '${output.name}'`,
        output.datatype,
        fullShape(operatorBatch, output.dims),
      );
  }
  return problems;
}

/** Throws when the spec has problems: INVALID_ARG, or UNAVAILABLE when the only problem is models not served yet. */
export function assertValidOperator(
  spec: OperatorSpec,
  lookup: ModelSignatureLookup,
  what = `operator '${spec.name}'`,
): void {
  const problems = validateOperator(spec, lookup);
  if (problems.length === 0) return;
  const notYet = problems.every((p) => p.code === "unknown-model");
  const list = problems.map((p) => p.message).join("; ");
  throw notYet
    ? new OperonError("UNAVAILABLE", `${what} cannot be served yet: ${list}`)
    : new OperonError("INVALID_ARG", `${what} is invalid: ${list}`);
}

/**
 * A step's fallback must stand in for its model: a fallback model served
 * now, taking the step's mapped inputs and producing its mapped outputs
 * with the same datatypes; default outputs for exactly the step's mapped
 * outputs, with the datatypes of the step model's outputs.
 */
function checkFallback(
  step: ModelStepSpec,
  primary: ServedModelSignature | undefined,
  lookup: ModelSignatureLookup,
  problem: (code: OperatorProblemCode, message: string) => void,
): void {
  const fallback = step.fallback!;
  const primaryType = (name: string): DataType | undefined => primary?.outputs.find((t) => t.name === name)?.datatype;
  const at = `step '${step.id}': fallback`;
  if ("model" in fallback) {
    const signature = lookup(fallback.model, fallback.version);
    if (signature === undefined) {
      problem(
        "unknown-model",
        `${at} model '${fallback.model}'${fallback.version !== undefined ? ` version ${fallback.version}` : ""} is not served (load it first)`,
      );
      return;
    }
    const inputs = new Map(signature.inputs.map((t) => [t.name, t]));
    for (const name of Object.keys(step.inputs))
      if (!inputs.has(name))
        problem(
          "unknown-model-tensor",
          `${at} model '${fallback.model}' has no input '${name}' (its inputs: ${listNames(inputs.keys())})`,
        );
    for (const input of signature.inputs)
      if (!input.optional && step.inputs[input.name] === undefined)
        problem(
          "unmapped-model-input",
          `${at} model '${fallback.model}' needs input '${input.name}', which the step does not map`,
        );
    for (const name of Object.keys(step.outputs)) {
      const output = signature.outputs.find((t) => t.name === name);
      const expected = primaryType(name);
      if (output === undefined)
        problem(
          "unknown-model-tensor",
          `${at} model '${fallback.model}' has no output '${name}' (its outputs: ${listNames(signature.outputs.map((t) => t.name))})`,
        );
      else if (expected !== undefined && output.datatype !== expected)
        problem(
          "type-mismatch",
          `${at} model '${fallback.model}' output '${name}' is ${output.datatype}, but model '${step.model}' answers ${expected}`,
        );
    }
    return;
  }
  const mapped = Object.keys(step.outputs);
  for (const name of mapped)
    if (fallback.outputs[name] === undefined)
      problem(
        "unknown-model-tensor",
        `${at} outputs: no default for output '${name}' (the step maps ${listNames(mapped)})`,
      );
  for (const [name, output] of Object.entries(fallback.outputs)) {
    if (!mapped.includes(name)) {
      problem(
        "unknown-model-tensor",
        `${at} outputs: '${name}' is not an output the step maps (it maps ${listNames(mapped)})`,
      );
      continue;
    }
    const expected = primaryType(name);
    if (expected !== undefined && output.datatype !== expected)
      problem(
        "type-mismatch",
        `${at} outputs: '${name}' is ${output.datatype}, but model '${step.model}' answers ${expected}`,
      );
  }
}

function modelShape(signature: ServedModelSignature, tensor: ServedTensorConfig): number[] {
  return fullShape(signature.maxBatchSize, tensor.dims);
}

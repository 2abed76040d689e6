import { z } from "zod";
import type { DataType } from "@operon/protocol/datatypes";
import { findStep, parseStepParams, type StepPort } from "./step-catalog.js";

/**
 * A step pipeline's plan, checked without running anything (pure and
 * browser-safe: the worker builds its pipeline from it, the control plane
 * and the console check a steps.json with it before anything is stored).
 *
 *   { "steps": [
 *       { "id": "decode", "step": "image.decode", "params": { "channels": 3 } },
 *       { "id": "resize", "step": "image.resize", "params": { "height": 48, "width": 192, "fit": "height" } },
 *       ...
 *       { "id": "top", "step": "tensor.topk", "params": { "k": 1, "labels": "labels.txt" },
 *         "outputs": { "label": "label", "score": "score" } } ] }
 *
 * Wiring: `inputs` maps a step's port to a board tensor; a port left out
 * reads, for the step's first port, the previous step's first output (the
 * model's first input for the first step), for any other port the tensor
 * of its own name. `outputs` maps a port to the name it is published
 * under; without it every port publishes under its own name (a later
 * step's tensor shadows an earlier one of the same name). The model's
 * outputs are read off the board by name.
 *
 * Every problem is listed, each naming its step and field: unknown steps,
 * parameters (the catalog's schemas), ports, tensors no earlier step
 * produces, model outputs nobody produces, datatypes the ports do not take.
 */
const StepEntrySchema = z.strictObject({
  id: z
    .string({ error: "id must be a non-empty string" })
    .min(1, { error: "id must be a non-empty string" })
    .optional(),
  step: z.string({ error: "step must be the name of a built-in step" }),
  params: z.record(z.string(), z.unknown(), { error: "params must be an object" }).optional(),
  inputs: z.record(z.string(), z.string(), { error: "inputs must be an object of port -> tensor name" }).optional(),
  outputs: z.record(z.string(), z.string(), { error: "outputs must be an object of port -> tensor name" }).optional(),
});

export const PipelineSchema = z.strictObject({
  steps: z
    .array(StepEntrySchema, { error: "steps must be an array" })
    .min(1, { error: "steps must name at least one step" })
    .max(64, { error: "steps may hold at most 64 steps" }),
});

export type PipelineSpec = z.output<typeof PipelineSchema>;

export interface PlannedStep {
  id: string;
  step: string;
  /** As given (the catalog's schema validated them; the worker parses them again to get defaults). */
  params: Record<string, unknown>;
  /** port -> board tensor */
  inputs: Array<[string, string]>;
  /** port -> board tensor */
  outputs: Array<[string, string]>;
  /** Files of the model's folder the step reads (labels, tokenizer.json). */
  files: string[];
}

/** A model tensor as the plan sees it (datatype optional: unknown when the caller has no config yet). */
export interface PlanTensor {
  name: string;
  datatype?: DataType;
}

export type PipelinePlan =
  | {
      ok: true;
      steps: PlannedStep[];
      /** Where each board tensor comes from: the port that last publishes it. */
      producers: Map<string, StepPort>;
      /** What reads each model input: the ports. */
      consumers: Map<string, StepPort[]>;
    }
  | { ok: false; problems: string[] };

export function planPipeline(raw: unknown, signature: { inputs: PlanTensor[]; outputs: PlanTensor[] }): PipelinePlan {
  const parsed = PipelineSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      ok: false,
      problems: parsed.error.issues.map(
        (issue) => `${issue.path.map(String).join(".") || "steps.json"}: ${issue.message}`,
      ),
    };
  }
  const problems: string[] = [];
  const inputNames = signature.inputs.map((input) => input.name);
  const board = new Map<string, StepPort | undefined>(inputNames.map((name) => [name, undefined]));
  const consumers = new Map<string, StepPort[]>();
  const ids = new Set<string>();
  const steps: PlannedStep[] = [];
  let previousFirst: string | undefined = inputNames[0];
  parsed.data.steps.forEach((entry, index) => {
    const id = entry.id ?? `${index + 1}`;
    const where = `step ${index + 1} '${id}' (${entry.step})`;
    if (ids.has(id)) problems.push(`${where}: id '${id}' is used more than once`);
    ids.add(id);
    const definition = findStep(entry.step);
    const params = parseStepParams(entry.step, entry.params ?? {});
    if (!params.ok || definition === undefined) {
      problems.push(...(params.ok ? [] : params.problems).map((problem) => `${where}: ${problem}`));
      previousFirst = undefined;
      return;
    }
    const inPorts = definition.inputs(params.params);
    const outPorts = definition.outputs(params.params);
    const portNames = (ports: StepPort[]) => ports.map((port) => port.name).join(", ");
    for (const port of Object.keys(entry.inputs ?? {})) {
      if (!inPorts.some((p) => p.name === port))
        problems.push(`${where}: inputs.${port}: no such input (inputs: ${portNames(inPorts)})`);
    }
    for (const port of Object.keys(entry.outputs ?? {})) {
      if (!outPorts.some((p) => p.name === port))
        problems.push(`${where}: outputs.${port}: no such output (outputs: ${portNames(outPorts)})`);
    }
    const inputs = inPorts.map((port, i): [string, string] => [
      port.name,
      entry.inputs?.[port.name] ?? (i === 0 && previousFirst !== undefined ? previousFirst : port.name),
    ]);
    inputs.forEach(([portName, tensor], i) => {
      const port = inPorts[i]!;
      if (!board.has(tensor)) {
        problems.push(
          `${where}: input '${portName}' reads '${tensor}', which neither the model's inputs nor an earlier step provide (available: ${[...board.keys()].join(", ")})`,
        );
        return;
      }
      const producer = board.get(tensor);
      const given = producer?.datatypes ?? datatypeOf(signature.inputs, tensor);
      if (given !== undefined && !given.some((datatype) => port.datatypes.includes(datatype))) {
        problems.push(
          `${where}: input '${portName}' takes ${port.datatypes.join(" or ")}, but '${tensor}' is ${given.join(" or ")}`,
        );
      }
      if (producer === undefined) consumers.set(tensor, [...(consumers.get(tensor) ?? []), port]);
    });
    const outputs = outPorts.map((port): [string, string] => [port.name, entry.outputs?.[port.name] ?? port.name]);
    outputs.forEach(([, tensor], i) => board.set(tensor, outPorts[i]!));
    previousFirst = outputs[0]?.[1];
    const files = definition.files?.(params.params) ?? [];
    steps.push({ id, step: entry.step, params: entry.params ?? {}, inputs, outputs, files });
  });
  const producers = new Map<string, StepPort>();
  for (const output of signature.outputs) {
    const producer = board.get(output.name);
    if (!board.has(output.name) || (producer === undefined && !inputNames.includes(output.name))) {
      problems.push(
        `model output '${output.name}' is produced by no step (name it in a step's outputs, e.g. "outputs": { "y": "${output.name}" })`,
      );
      continue;
    }
    if (producer !== undefined) {
      producers.set(output.name, producer);
      if (output.datatype !== undefined && !producer.datatypes.includes(output.datatype)) {
        problems.push(
          `model output '${output.name}' is declared ${output.datatype}, but its step produces ${producer.datatypes.join(" or ")}`,
        );
      }
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, steps, producers, consumers };
}

function datatypeOf(tensors: PlanTensor[], name: string): DataType[] | undefined {
  const datatype = tensors.find((tensor) => tensor.name === name)?.datatype;
  // FP16 / BF16 inputs are widened to FP32 where they enter a pipeline.
  if (datatype === "FP16" || datatype === "BF16") return ["FP32"];
  return datatype === undefined ? undefined : [datatype];
}

import { z } from "zod";
import { findStep, parseStepParams } from "./step-catalog.js";
import { createStep, type StepEnvironment, type StepRun } from "./step-runtime.js";
import { StepInputError, type StepTensor } from "./step-tensor.js";

/**
 * A step pipeline: what one `operon_steps` model runs (its version
 * folder's steps.json). Steps run in order on one sample at a time,
 * exchanging tensors by name on a board that starts with the model's
 * inputs:
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
 * Everything is checked at load, each problem naming its step and field:
 * unknown steps, parameters (the catalog's schemas), ports, tensors no
 * earlier step produces, model outputs nobody produces.
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
    .min(1, { error: "steps must name at least one step" }),
});

export type PipelineSpec = z.output<typeof PipelineSchema>;

interface CompiledStep {
  id: string;
  step: string;
  run: StepRun;
  /** port -> board tensor */
  inputs: Array<[string, string]>;
  /** port -> board tensor */
  outputs: Array<[string, string]>;
}

export interface PipelineTiming {
  id: string;
  step: string;
  durationMs: number;
}

/** What went wrong running a pipeline on a sample: the step, then the problem. */
export class PipelineStepError extends StepInputError {
  constructor(
    readonly stepId: string,
    readonly stepName: string,
    message: string,
  ) {
    super(`step '${stepId}' (${stepName}): ${message}`);
  }
}

export class StepPipeline {
  private constructor(
    private readonly steps: CompiledStep[],
    readonly outputNames: string[],
  ) {}

  /**
   * Checks the spec against the catalog and the model's signature and
   * builds every step; StepInputError lists every problem found (each
   * naming its step), before any step is built.
   */
  static async create(
    raw: unknown,
    signature: { inputs: string[]; outputs: string[] },
    env: StepEnvironment,
  ): Promise<StepPipeline> {
    const parsed = PipelineSchema.safeParse(raw);
    if (!parsed.success) {
      throw new StepInputError(
        parsed.error.issues
          .map((issue) => `${issue.path.map(String).join(".") || "steps.json"}: ${issue.message}`)
          .join("; "),
      );
    }
    const problems: string[] = [];
    const board = new Set(signature.inputs);
    const ids = new Set<string>();
    const plans: Array<{
      id: string;
      step: string;
      params: unknown;
      inputs: Array<[string, string]>;
      outputs: Array<[string, string]>;
    }> = [];
    let previousFirst: string | undefined = signature.inputs[0];
    parsed.data.steps.forEach((entry, index) => {
      const id = entry.id ?? `${index + 1}`;
      const where = `step ${index + 1} '${id}' (${entry.step})`;
      if (ids.has(id)) problems.push(`${where}: id '${id}' is used more than once`);
      ids.add(id);
      const definition = findStep(entry.step);
      const params = parseStepParams(entry.step, entry.params ?? {});
      if (!params.ok || definition === undefined) {
        problems.push(...(params.ok ? [] : params.problems).map((problem) => `${where}: ${problem}`));
        return;
      }
      const inPorts = definition.inputs(params.params).map((port) => port.name);
      const outPorts = definition.outputs(params.params).map((port) => port.name);
      for (const port of Object.keys(entry.inputs ?? {})) {
        if (!inPorts.includes(port))
          problems.push(`${where}: inputs.${port}: no such input (inputs: ${inPorts.join(", ")})`);
      }
      for (const port of Object.keys(entry.outputs ?? {})) {
        if (!outPorts.includes(port))
          problems.push(`${where}: outputs.${port}: no such output (outputs: ${outPorts.join(", ")})`);
      }
      const inputs = inPorts.map((port, i): [string, string] => [
        port,
        entry.inputs?.[port] ?? (i === 0 && previousFirst !== undefined ? previousFirst : port),
      ]);
      for (const [port, tensor] of inputs) {
        if (!board.has(tensor)) {
          problems.push(
            `${where}: input '${port}' reads '${tensor}', which neither the model's inputs nor an earlier step provide (available: ${[...board].join(", ")})`,
          );
        }
      }
      const outputs = outPorts.map((port): [string, string] => [port, entry.outputs?.[port] ?? port]);
      for (const [, tensor] of outputs) board.add(tensor);
      previousFirst = outputs[0]?.[1];
      plans.push({ id, step: entry.step, params: entry.params ?? {}, inputs, outputs });
    });
    for (const output of signature.outputs) {
      if (!board.has(output)) {
        problems.push(
          `model output '${output}' is produced by no step (name it in a step's outputs, e.g. "outputs": { "y": "${output}" })`,
        );
      }
    }
    if (problems.length > 0) throw new StepInputError(problems.join("; "));
    const steps: CompiledStep[] = [];
    for (const [index, plan] of plans.entries()) {
      try {
        steps.push({ ...plan, run: await createStep(plan.step, plan.params, env) });
      } catch (error) {
        if (error instanceof StepInputError) {
          throw new StepInputError(`step ${index + 1} '${plan.id}' (${plan.step}): ${error.message}`);
        }
        throw error;
      }
    }
    return new StepPipeline(steps, signature.outputs);
  }

  get stepCount(): number {
    return this.steps.length;
  }

  /** Runs one sample; a step's StepInputError comes back as a PipelineStepError naming it. */
  async run(inputs: ReadonlyMap<string, StepTensor>, timings?: PipelineTiming[]): Promise<Map<string, StepTensor>> {
    const board = new Map(inputs);
    for (const step of this.steps) {
      const args: Record<string, StepTensor> = {};
      for (const [port, tensor] of step.inputs) {
        const value = board.get(tensor);
        if (value === undefined)
          throw new PipelineStepError(step.id, step.step, `input '${port}' ('${tensor}') is missing from the request`);
        args[port] = value;
      }
      const started = performance.now();
      let produced: Record<string, StepTensor>;
      try {
        produced = await step.run(args);
      } catch (error) {
        if (error instanceof StepInputError) throw new PipelineStepError(step.id, step.step, error.message);
        throw error;
      }
      timings?.push({ id: step.id, step: step.step, durationMs: performance.now() - started });
      for (const [port, tensor] of step.outputs) {
        const value = produced[port];
        if (value !== undefined) board.set(tensor, value);
      }
    }
    const outputs = new Map<string, StepTensor>();
    for (const name of this.outputNames) {
      const value = board.get(name);
      if (value !== undefined) outputs.set(name, value);
    }
    return outputs;
  }
}

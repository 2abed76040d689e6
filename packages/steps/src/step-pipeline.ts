import { type PlanTensor, planPipeline } from "./pipeline-plan.js";
import { createStep, type StepEnvironment, type StepRun } from "./step-runtime.js";
import { StepInputError, type StepTensor } from "./step-tensor.js";

/**
 * A step pipeline as a worker runs it: the plan (pipeline-plan.ts: the
 * steps.json format, its wiring rules and its checks) with each step built.
 * Steps run in order on one sample at a time, exchanging tensors by name
 * on a board that starts with the model's inputs.
 */
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
    signature: { inputs: PlanTensor[]; outputs: PlanTensor[] },
    env: StepEnvironment,
  ): Promise<StepPipeline> {
    const planned = planPipeline(raw, signature);
    if (!planned.ok) throw new StepInputError(planned.problems.join("; "));
    const plans = planned.steps;
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
    return new StepPipeline(
      steps,
      signature.outputs.map((output) => output.name),
    );
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

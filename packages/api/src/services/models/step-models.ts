import { createHash } from "node:crypto";
import { writePbtxt } from "@operon/model-config/pbtxt-writer";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { type DataType, toConfigDataType } from "@operon/protocol/datatypes";
import { planPipeline } from "@operon/steps/pipeline-plan";
import { AppError, type FieldError } from "../../app-error.js";
import { createFileModel, decodeUploadedFiles } from "./file-model-creation.js";
import type { ModelActor } from "./model-types.js";
import type { ModelWorkspace } from "./model-workspace.js";

/**
 * Step models: models built from Operon's built-in steps (@operon/steps)
 * without code, as the console's editor makes them. A step model is a
 * folder of the model store served by the gateway's `operon_steps`
 * backend, in a worker process: config.pbtxt (its tensors, written here),
 * `1/steps.json` (the pipeline) and the files its steps read (labels,
 * tokenizer.json), uploaded with it. Operators call it like any model.
 *
 * Everything is checked before anything is stored: the pipeline against the
 * catalog (parameters, ports, wiring, datatypes at each edge and against
 * the declared tensors), the files it needs, the names. Then rows (state
 * LOADING), files, the gateway's load, as uploads do; a failure undoes all
 * of it. The audit event carries the SHA-256 of steps.json and of each file.
 */
export const STEPS_PLATFORM = "operon_steps";
const STEPS_FILE = "steps.json";
/** Limits of one creation's files (labels and vocabularies, not weights). */
export const MAX_STEP_FILES = 8;
export const MAX_STEP_FILE_BYTES = 16 * 1024 * 1024;

export interface StepModelTensor {
  name: string;
  datatype: DataType;
  dims: number[];
}

export interface CreateStepModelInput {
  name: string;
  description?: string | undefined;
  /** > 0: tensors carry a batch dimension not written in dims (the pipeline runs per element). Default 8. */
  maxBatchSize?: number | undefined;
  inputs: StepModelTensor[];
  outputs: StepModelTensor[];
  /** The steps.json object: { steps: [...] } (see @operon/steps/pipeline-plan). */
  pipeline: unknown;
  /** Files the steps read, base64, paths relative to the version folder. */
  files?: Array<{ path: string; data: string }> | undefined;
}

export class StepModels {
  constructor(private readonly ws: ModelWorkspace) {}

  async create(
    who: ModelActor,
    input: CreateStepModelInput,
  ): Promise<{ name: string; version: number; state: string; sha256: string }> {
    const { name } = input;
    const plan = planPipeline(input.pipeline, { inputs: input.inputs, outputs: input.outputs });
    const fieldErrors: FieldError[] = [];
    if (!plan.ok) fieldErrors.push(...plan.problems.map((message) => ({ path: "pipeline", message })));
    const files = decodeUploadedFiles(
      input.files ?? [],
      {
        maxFiles: MAX_STEP_FILES,
        maxFileBytes: MAX_STEP_FILE_BYTES,
        refusePath: (path) =>
          path === STEPS_FILE ? `'${STEPS_FILE}' is the pipeline Operon writes; give the other files` : undefined,
      },
      fieldErrors,
    );
    if (plan.ok) {
      for (const step of plan.steps) {
        for (const needed of step.files) {
          if (!files.has(needed)) {
            fieldErrors.push({
              path: "files",
              message: `step '${step.id}' (${step.step}) reads '${needed}': upload it with the model`,
            });
          }
        }
      }
    }
    if (fieldErrors.length > 0) {
      throw new AppError(
        "VALIDATION_FAILED",
        `step model '${name}' is invalid: ${fieldErrors.map((e) => `${e.path}: ${e.message}`).join("; ")}`,
        { fieldErrors },
      );
    }
    const maxBatchSize = input.maxBatchSize ?? 8;
    const tensor = (t: StepModelTensor) => ({ name: t.name, data_type: toConfigDataType(t.datatype), dims: t.dims });
    const config: ModelConfigJson = {
      name,
      backend: STEPS_PLATFORM,
      max_batch_size: maxBatchSize,
      input: input.inputs.map(tensor),
      output: input.outputs.map(tensor),
      ...(maxBatchSize > 0 ? { dynamic_batching: {} } : {}),
      instance_group: [{ count: 1, kind: "KIND_CPU" }],
    } as ModelConfigJson;
    const configText = writePbtxt(config, `config of step model '${name}'`);
    const stepsText = `${JSON.stringify(input.pipeline, null, 2)}\n`;
    const sha256 = createHash("sha256").update(stepsText).digest("hex");
    const stored: Array<[string, Buffer]> = [[STEPS_FILE, Buffer.from(stepsText)], ...files];
    return createFileModel(this.ws, who, {
      name,
      description: input.description ?? null,
      platform: STEPS_PLATFORM,
      entryFile: STEPS_FILE,
      kind: "step model",
      files: stored,
      config,
      configText,
      sha256,
      audit: {
        action: "model.steps.create",
        after: { steps: plan.ok ? plan.steps.map((step) => step.step) : [] },
        files: [...files],
      },
    });
  }
}

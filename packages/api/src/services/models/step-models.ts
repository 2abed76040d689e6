import { createHash } from "node:crypto";
import { writePbtxt } from "@operon/model-config/pbtxt-writer";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { type DataType, toConfigDataType } from "@operon/protocol/datatypes";
import { planPipeline } from "@operon/steps/pipeline-plan";
import type { Prisma } from "@operon/db";
import { AppError, type FieldError } from "../../app-error.js";
import { recordAudit } from "../audit/audit-log.js";
import type { StoreChange } from "./model-store.js";
import { isUnavailable, syncVersionStates, versionState } from "./model-gateway-view.js";
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
const FILE_PATH = /^(?!.*(^|\/)\.\.?(\/|$))[A-Za-z0-9_][A-Za-z0-9_.\-/]{0,127}$/;

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
    const files = new Map<string, Buffer>();
    (input.files ?? []).forEach((file, index) => {
      if (!FILE_PATH.test(file.path) || file.path === STEPS_FILE) {
        fieldErrors.push({
          path: `files.${index}.path`,
          message: `'${file.path}' must be a relative path of letters, digits, '_', '.', '-' and '/', without '..' (and not ${STEPS_FILE})`,
        });
        return;
      }
      if (files.has(file.path))
        fieldErrors.push({ path: `files.${index}.path`, message: `'${file.path}' is given twice` });
      // Checked on the text first, so an oversized file is not decoded at all.
      if (file.data.length > Math.ceil(MAX_STEP_FILE_BYTES / 3) * 4) {
        fieldErrors.push({ path: `files.${index}.data`, message: `at most ${MAX_STEP_FILE_BYTES} bytes` });
        return;
      }
      if (file.data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(file.data)) {
        fieldErrors.push({ path: `files.${index}.data`, message: "not base64 (standard alphabet, with padding)" });
        return;
      }
      files.set(file.path, Buffer.from(file.data, "base64"));
    });
    if ((input.files ?? []).length > MAX_STEP_FILES) {
      fieldErrors.push({ path: "files", message: `at most ${MAX_STEP_FILES} files` });
    }
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
    const sizeBytes = stored.reduce((sum, [, data]) => sum + data.length, 0);
    const version = 1;

    return this.ws.withLock(name, async () => {
      const existing = await this.ws.prisma.model.findUnique({ where: { name }, include: { versions: true } });
      if ((existing !== null && existing.versions.length > 0) || (await this.ws.options.store.hasModel(name))) {
        throw new AppError("CONFLICT", `a model named '${name}' exists; step models are created under a new name`, {
          fieldErrors: [{ path: "name", message: "taken" }],
        });
      }
      await this.ws.assertNotRepositoryModel(name);
      const { model, row } = await this.ws.prisma.$transaction(async (tx) => {
        const model = await tx.model.upsert({
          where: { name },
          create: { name, description: input.description ?? null, platform: STEPS_PLATFORM, ownerId: who.userId },
          update: { description: input.description ?? null, platform: STEPS_PLATFORM },
        });
        const row = await tx.modelVersion.create({
          data: {
            modelId: model.id,
            version,
            artifactUri: `${name}/${version}/${STEPS_FILE}`,
            sizeBytes: BigInt(sizeBytes),
            sha256,
            config: config as Prisma.InputJsonValue,
            state: "LOADING",
            uploadedById: who.userId,
          },
        });
        return { model, row };
      });
      let change: StoreChange | undefined;
      let loaded = false;
      try {
        change = await this.ws.options.store.addModelFromFiles(name, version, stored, configText);
        try {
          await this.ws.gateway.loadModel(name);
        } catch (error) {
          throw this.ws.loadFailure(error, name, `step model '${name}'`);
        }
        loaded = true;
        const view = await this.ws.gatewayView();
        await this.ws.prisma.$transaction(async (tx) => {
          await syncVersionStates(tx, model.id, name, view, version);
          await recordAudit(tx, who.actor, {
            action: "model.steps.create",
            targetType: "Model",
            targetId: name,
            after: {
              name,
              version,
              sha256,
              steps: plan.ok ? plan.steps.map((step) => step.step) : [],
              files: [...files].map(([path, data]) => ({
                path,
                sizeBytes: data.length,
                sha256: createHash("sha256").update(data).digest("hex"),
              })),
              config,
            },
          });
        });
        this.ws.removed.delete(name);
        this.ws.options.onChange?.({ kind: "MODEL", name, version: String(version), action: "model.upload" });
        return { name, version, state: versionState(view, name, version).state, sha256 };
      } catch (error) {
        await this.ws.undo(`the creation of step model '${name}'`, [
          async () => {
            if (loaded || isUnavailable(error)) await this.ws.gateway.unloadModel(name);
          },
          async () => change?.undo(),
          async () => {
            if (existing === null) await this.ws.prisma.model.delete({ where: { id: model.id } });
            else await this.ws.prisma.modelVersion.delete({ where: { id: row.id } });
          },
        ]);
        this.ws.removed.add(name);
        throw error;
      }
    });
  }
}

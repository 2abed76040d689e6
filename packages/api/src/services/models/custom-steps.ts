import { createHash } from "node:crypto";
import { writePbtxt } from "@operon/model-config/pbtxt-writer";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { toConfigDataType } from "@operon/protocol/datatypes";
import type { Prisma, PrismaClient } from "@operon/db";
import { AppError, type FieldError } from "../../app-error.js";
import { type Actor, recordAudit } from "../audit/audit-log.js";
import { compileCustomStep, formatProblem } from "./custom-step-compile.js";
import type { StoreChange } from "./model-store.js";
import { isUnavailable, syncVersionStates, versionState } from "./model-gateway-view.js";
import type { ModelActor } from "./model-types.js";
import type { ModelWorkspace } from "./model-workspace.js";
import type { StepModelTensor } from "./step-models.js";

/**
 * Custom steps: TypeScript an engineer uploads (model.ts plus the files it
 * reads: labels, vocabularies), served by the gateway's typescript backend
 * in a sandboxed worker (parameter operon_sandbox "true", always set here:
 * see the gateway's instances/worker-sandbox.ts and the README's trust
 * model). Operators call it like any model.
 *
 * Before anything is stored: the file paths, sizes and base64, and model.ts
 * type-checked (custom-step-compile.ts); each compile problem comes back as
 * a field error `model.ts:line:col message`. Then rows, files and the
 * gateway's load, as step models do; a failure undoes all of it. The audit
 * event (model.custom_step.create) carries the SHA-256 of model.ts and of
 * each file. Who may upload code: engineers and admins, or admins only when
 * an admin says so (CodeUploadPolicy).
 */
export const CUSTOM_STEP_PLATFORM = "custom_step";
export const CUSTOM_STEP_ENTRY = "model.ts";
export const MAX_CUSTOM_STEP_FILES = 8;
export const MAX_CUSTOM_STEP_FILE_BYTES = 16 * 1024 * 1024;
const FILE_PATH = /^(?!.*(^|\/)\.\.?(\/|$))[A-Za-z0-9_][A-Za-z0-9_.\-/]{0,127}$/;
/** Code the worker would load beside model.ts without compiling it: only model.ts is transpiled there. */
const CODE_FILE = /\.(c|m)?(t|j)sx?$/;

export interface CreateCustomStepInput {
  name: string;
  description?: string | undefined;
  /** > 0: tensors carry a batch dimension not written in dims. Default 0. */
  maxBatchSize?: number | undefined;
  inputs: StepModelTensor[];
  outputs: StepModelTensor[];
  /** model.ts and the files it reads, base64, paths relative to the version folder. */
  files: Array<{ path: string; data: string }>;
}

export class CustomSteps {
  constructor(
    private readonly ws: ModelWorkspace,
    private readonly policy: CodeUploadPolicy,
  ) {}

  async create(
    who: ModelActor & { role: string },
    input: CreateCustomStepInput,
  ): Promise<{ name: string; version: number; state: string; sha256: string }> {
    await this.policy.assertMayUpload(who.role);
    const { name } = input;
    const files = decodeFiles(input.files);
    const source = files.get(CUSTOM_STEP_ENTRY)!.toString("utf8");
    const problems = compileCustomStep(new Map([[CUSTOM_STEP_ENTRY, source]])).map(formatProblem);
    if (problems.length > 0) {
      throw new AppError(
        "VALIDATION_FAILED",
        `custom step '${name}' does not compile: ${problems.slice(0, 5).join("; ")}${problems.length > 5 ? ` (and ${problems.length - 5} more)` : ""}`,
        { fieldErrors: problems.map((message) => ({ path: `files.${CUSTOM_STEP_ENTRY}`, message })) },
      );
    }
    const maxBatchSize = input.maxBatchSize ?? 0;
    const tensor = (t: StepModelTensor) => ({ name: t.name, data_type: toConfigDataType(t.datatype), dims: t.dims });
    const config = {
      name,
      backend: "typescript",
      max_batch_size: maxBatchSize,
      input: input.inputs.map(tensor),
      output: input.outputs.map(tensor),
      instance_group: [{ count: 1, kind: "KIND_CPU" }],
      parameters: { operon_sandbox: { string_value: "true" } },
    } as ModelConfigJson;
    const configText = writePbtxt(config, `config of custom step '${name}'`);
    const sha256 = createHash("sha256").update(files.get(CUSTOM_STEP_ENTRY)!).digest("hex");
    const stored = [...files];
    const sizeBytes = stored.reduce((sum, [, data]) => sum + data.length, 0);
    const version = 1;

    return this.ws.withLock(name, async () => {
      const existing = await this.ws.prisma.model.findUnique({ where: { name }, include: { versions: true } });
      if ((existing !== null && existing.versions.length > 0) || (await this.ws.options.store.hasModel(name))) {
        throw new AppError("CONFLICT", `a model named '${name}' exists; custom steps are created under a new name`, {
          fieldErrors: [{ path: "name", message: "taken" }],
        });
      }
      await this.ws.assertNotRepositoryModel(name);
      const { model, row } = await this.ws.prisma.$transaction(async (tx) => {
        const model = await tx.model.upsert({
          where: { name },
          create: { name, description: input.description ?? null, platform: CUSTOM_STEP_PLATFORM, ownerId: who.userId },
          update: { description: input.description ?? null, platform: CUSTOM_STEP_PLATFORM },
        });
        const row = await tx.modelVersion.create({
          data: {
            modelId: model.id,
            version,
            artifactUri: `${name}/${version}/${CUSTOM_STEP_ENTRY}`,
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
          throw this.ws.loadFailure(error, name, `custom step '${name}'`);
        }
        loaded = true;
        const view = await this.ws.gatewayView();
        await this.ws.prisma.$transaction(async (tx) => {
          await syncVersionStates(tx, model.id, name, view, version);
          await recordAudit(tx, who.actor, {
            action: "model.custom_step.create",
            targetType: "Model",
            targetId: name,
            after: {
              name,
              version,
              sha256,
              sandboxed: true,
              files: stored.map(([path, data]) => ({
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
        await this.ws.undo(`the creation of custom step '${name}'`, [
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

/** The uploaded files by path; VALIDATION_FAILED naming each bad one (and a missing model.ts). */
function decodeFiles(input: CreateCustomStepInput["files"]): Map<string, Buffer> {
  const fieldErrors: FieldError[] = [];
  const files = new Map<string, Buffer>();
  input.forEach((file, index) => {
    if (!FILE_PATH.test(file.path)) {
      fieldErrors.push({
        path: `files.${index}.path`,
        message: `'${file.path}' must be a relative path of letters, digits, '_', '.', '-' and '/', without '..'`,
      });
      return;
    }
    if (file.path !== CUSTOM_STEP_ENTRY && CODE_FILE.test(file.path)) {
      fieldErrors.push({
        path: `files.${index}.path`,
        message: `'${file.path}': a custom step's code is its one ${CUSTOM_STEP_ENTRY} (other files are data it reads)`,
      });
      return;
    }
    if (files.has(file.path))
      fieldErrors.push({ path: `files.${index}.path`, message: `'${file.path}' is given twice` });
    // Checked on the text first, so an oversized file is not decoded at all.
    if (file.data.length > Math.ceil(MAX_CUSTOM_STEP_FILE_BYTES / 3) * 4) {
      fieldErrors.push({ path: `files.${index}.data`, message: `at most ${MAX_CUSTOM_STEP_FILE_BYTES} bytes` });
      return;
    }
    if (file.data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(file.data)) {
      fieldErrors.push({ path: `files.${index}.data`, message: "not base64 (standard alphabet, with padding)" });
      return;
    }
    files.set(file.path, Buffer.from(file.data, "base64"));
  });
  if (input.length > MAX_CUSTOM_STEP_FILES) {
    fieldErrors.push({ path: "files", message: `at most ${MAX_CUSTOM_STEP_FILES} files` });
  }
  if (!files.has(CUSTOM_STEP_ENTRY) && !input.some((file) => file.path === CUSTOM_STEP_ENTRY)) {
    fieldErrors.push({ path: "files", message: `a custom step needs its ${CUSTOM_STEP_ENTRY}` });
  }
  if (fieldErrors.length > 0) {
    throw new AppError(
      "VALIDATION_FAILED",
      `custom step files are invalid: ${fieldErrors.map((e) => `${e.path}: ${e.message}`).join("; ")}`,
      { fieldErrors },
    );
  }
  return files;
}

/**
 * Who may upload code: engineers and admins (the default), or admins only.
 * One row (CodeUploadSetting, id "default") that admins change, audited.
 */
export class CodeUploadPolicy {
  constructor(private readonly prisma: PrismaClient) {}

  async get(): Promise<{ adminsOnly: boolean }> {
    const row = await this.prisma.codeUploadSetting.findUnique({ where: { id: "default" } });
    return { adminsOnly: row?.adminsOnly ?? false };
  }

  async set(actor: Actor, adminsOnly: boolean): Promise<{ adminsOnly: boolean }> {
    const before = await this.get();
    await this.prisma.$transaction(async (tx) => {
      await tx.codeUploadSetting.upsert({
        where: { id: "default" },
        create: { id: "default", adminsOnly, updatedById: actor.userId },
        update: { adminsOnly, updatedById: actor.userId },
      });
      await recordAudit(tx, actor, {
        action: "settings.code_upload",
        targetType: "settings",
        targetId: "code_upload",
        before,
        after: { adminsOnly },
      });
    });
    return { adminsOnly };
  }

  /** FORBIDDEN for a non-admin while uploads are restricted to admins. */
  async assertMayUpload(role: string): Promise<void> {
    if (role === "ADMIN") return;
    if ((await this.get()).adminsOnly) {
      throw new AppError("FORBIDDEN", "an admin has restricted uploading code (custom steps) to admins");
    }
  }
}

import { createHash } from "node:crypto";
import { writePbtxt } from "@operon/model-config/pbtxt-writer";
import type { ModelConfigJson } from "@operon/model-config/model-config-types";
import { fromConfigDataType, toConfigDataType } from "@operon/protocol/datatypes";
import type { Prisma, PrismaClient } from "@operon/db";
import { AppError, type FieldError } from "../../app-error.js";
import { type Actor, recordAudit } from "../audit/audit-log.js";
import { CustomStepChecker } from "./custom-step-checker.js";
import { formatProblem } from "./custom-step-compile.js";
import { type DeclaredStepSignature, SIGNATURE_EXPORT } from "./custom-step-signature.js";
import { createFileModel, decodeUploadedFiles } from "./file-model-creation.js";
import { isUnavailable, syncVersionStates, versionState } from "./model-gateway-view.js";
import type { StoreChange } from "./model-store.js";
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
 * type-checked (custom-step-compile.ts, in a worker thread: custom-step-checker.ts,
 * so other requests go on meanwhile); each compile problem comes back as
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
/** Code the worker would load beside model.ts without compiling it: only model.ts is transpiled there. */
const CODE_FILE = /\.(c|m)?(t|j)sx?$/;

export interface CreateCustomStepInput {
  name: string;
  description?: string | undefined;
  /** > 0: tensors carry a batch dimension not written in dims. Default: model.ts's declaration, else 0. */
  maxBatchSize?: number | undefined;
  /** The step's tensors; default what model.ts declares (`export const operonSignature`), which they must match. */
  inputs?: StepModelTensor[] | undefined;
  outputs?: StepModelTensor[] | undefined;
  /** model.ts and the files it reads, base64, paths relative to the version folder. */
  files: Array<{ path: string; data: string }>;
}

export class CustomSteps {
  constructor(
    private readonly ws: ModelWorkspace,
    private readonly policy: CodeUploadPolicy,
    private readonly checker: CustomStepChecker = new CustomStepChecker(),
  ) {}

  async create(
    who: ModelActor & { role: string },
    input: CreateCustomStepInput,
  ): Promise<{ name: string; version: number; state: string; sha256: string }> {
    await this.policy.assertMayUpload(who.role);
    const { name } = input;
    const files = decodeFiles(input.files);
    const declared = await this.assertCompiles(name, files);
    const signature = signatureOf(input, declared);
    const tensor = (t: StepModelTensor) => ({ name: t.name, data_type: toConfigDataType(t.datatype), dims: t.dims });
    const config = {
      name,
      backend: "typescript",
      max_batch_size: signature.maxBatchSize,
      input: signature.inputs.map(tensor),
      output: signature.outputs.map(tensor),
      instance_group: [{ count: 1, kind: "KIND_CPU" }],
      parameters: { operon_sandbox: { string_value: "true" } },
    } as ModelConfigJson;
    const configText = writePbtxt(config, `config of custom step '${name}'`);
    const sha256 = createHash("sha256").update(files.get(CUSTOM_STEP_ENTRY)!).digest("hex");
    return createFileModel(this.ws, who, {
      name,
      description: input.description ?? null,
      platform: CUSTOM_STEP_PLATFORM,
      entryFile: CUSTOM_STEP_ENTRY,
      kind: "custom step",
      files: [...files],
      config,
      configText,
      sha256,
      audit: { action: "model.custom_step.create", after: { sandboxed: true } },
    });
  }

  /**
   * The next version of a custom step: its model.ts (and the files it reads)
   * type-checked, stored as a new version folder beside the others, and
   * served once the gateway loaded it (the config, its tensors and sandbox,
   * stays as uploaded; its version policy, latest by default, picks the new
   * version). A version the gateway refuses is removed again and the
   * versions served before go on serving. The caller checked that `who` may
   * change the model (its owner or an admin).
   */
  async addVersion(
    who: ModelActor & { role: string },
    input: { name: string; files: CreateCustomStepInput["files"] },
  ): Promise<{ name: string; version: number; state: string; sha256: string }> {
    await this.policy.assertMayUpload(who.role);
    const { name } = input;
    const files = decodeFiles(input.files);
    const declared = await this.assertCompiles(name, files);
    const sha256 = createHash("sha256").update(files.get(CUSTOM_STEP_ENTRY)!).digest("hex");
    const ws = this.ws;
    return ws.withLock(name, async () => {
      const model = await ws.prisma.model.findUnique({ where: { name }, include: { versions: true } });
      if (model === null || model.versions.length === 0)
        throw new AppError("NOT_FOUND", `there is no custom step named '${name}'`);
      if (model.platform !== CUSTOM_STEP_PLATFORM)
        throw new AppError(
          "CONFLICT",
          `model '${name}' is not a custom step (platform ${model.platform ?? "unknown"}); new versions of it are uploaded as models`,
        );
      const version =
        Math.max(...model.versions.map((v) => v.version), ...(await ws.options.store.versionsOnDisk(name))) + 1;
      const sizeBytes = [...files.values()].reduce((sum, data) => sum + data.length, 0);
      const config = model.versions.find(
        (v) => v.version === Math.max(...model.versions.map((w) => w.version)),
      )!.config;
      // The config's tensors stay across versions: a version declaring others would not be served as it says.
      if (declared !== null) signatureOf(configSignature(config as ModelConfigJson), declared);
      const row = await ws.prisma.modelVersion.create({
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
      let change: StoreChange | undefined;
      let loaded = false;
      try {
        change = await ws.options.store.addVersionFromFiles(name, version, [...files]);
        try {
          await ws.gateway.loadModel(name);
        } catch (error) {
          throw ws.loadFailure(error, name, `version ${version} of custom step '${name}'`);
        }
        loaded = true;
        const view = await ws.gatewayView();
        await ws.prisma.$transaction(async (tx) => {
          await syncVersionStates(tx, model.id, name, view, version);
          await recordAudit(tx, who.actor, {
            action: "model.custom_step.version",
            targetType: "Model",
            targetId: name,
            after: { name, version, sha256, sandboxed: true, files: fileDigests(files) },
          });
        });
        ws.options.onChange?.({ kind: "MODEL", name, version: String(version), action: "model.version" });
        return { name, version, state: versionState(view, name, version).state, sha256 };
      } catch (error) {
        // Files first (nothing may load them again), then back to the versions served before.
        await ws.undo(`version ${version} of custom step '${name}'`, [
          async () => change?.undo(),
          async () => {
            if (loaded || isUnavailable(error)) await ws.gateway.loadModel(name);
          },
          async () => ws.prisma.modelVersion.delete({ where: { id: row.id } }).then(() => undefined),
        ]);
        throw error;
      }
    });
  }

  /**
   * What the upload form shows as soon as model.ts is picked, before anything
   * is stored: its compile problems (model.ts:line:col) and the tensors it
   * declares (null when none), to prefill the form. The same check as an
   * upload, so the same rule on who may upload code.
   */
  async inspect(
    who: { role: string },
    input: { files: CreateCustomStepInput["files"] },
  ): Promise<{ problems: string[]; signature: DeclaredStepSignature | null }> {
    await this.policy.assertMayUpload(who.role);
    const files = decodeFiles(input.files);
    const source = files.get(CUSTOM_STEP_ENTRY)!.toString("utf8");
    const checked = await this.checker.check(new Map([[CUSTOM_STEP_ENTRY, source]]), CUSTOM_STEP_ENTRY);
    return { problems: checked.problems.map(formatProblem), signature: checked.signature };
  }

  /** VALIDATION_FAILED with each compile problem of model.ts at model.ts:line:col; else what it declares. */
  private async assertCompiles(
    name: string,
    files: ReadonlyMap<string, Buffer>,
  ): Promise<DeclaredStepSignature | null> {
    const source = files.get(CUSTOM_STEP_ENTRY)!.toString("utf8");
    const checked = await this.checker.check(new Map([[CUSTOM_STEP_ENTRY, source]]), CUSTOM_STEP_ENTRY);
    const problems = checked.problems.map(formatProblem);
    if (problems.length > 0) {
      throw new AppError(
        "VALIDATION_FAILED",
        `custom step '${name}' does not compile: ${problems.slice(0, 5).join("; ")}${problems.length > 5 ? ` (and ${problems.length - 5} more)` : ""}`,
        { fieldErrors: problems.map((message) => ({ path: `files.${CUSTOM_STEP_ENTRY}`, message })) },
      );
    }
    return checked.signature;
  }
}

interface StepSignature {
  maxBatchSize: number;
  inputs: StepModelTensor[];
  outputs: StepModelTensor[];
}

/**
 * The step's tensors: the ones given, else model.ts's declaration. Given and
 * declared must agree (the code says what it reads and returns); neither is
 * a field error that says how to give them.
 */
function signatureOf(
  given: {
    maxBatchSize?: number | undefined;
    inputs?: StepModelTensor[] | undefined;
    outputs?: StepModelTensor[] | undefined;
  },
  declared: DeclaredStepSignature | null,
): StepSignature {
  const fieldErrors: FieldError[] = [];
  for (const key of ["inputs", "outputs"] as const) {
    const tensors = given[key];
    if (tensors === undefined && declared === null)
      fieldErrors.push({
        path: key,
        message: `give the step's ${key}, or declare them in ${CUSTOM_STEP_ENTRY} (export const ${SIGNATURE_EXPORT})`,
      });
    else if (tensors !== undefined && declared !== null && describeTensors(tensors) !== describeTensors(declared[key]))
      fieldErrors.push({
        path: key,
        message: `differ from what ${CUSTOM_STEP_ENTRY} declares (${describeTensors(declared[key])}); change one or the other`,
      });
  }
  if (given.maxBatchSize !== undefined && declared !== null && given.maxBatchSize !== declared.maxBatchSize)
    fieldErrors.push({
      path: "maxBatchSize",
      message: `is ${given.maxBatchSize} but ${CUSTOM_STEP_ENTRY} declares ${declared.maxBatchSize}`,
    });
  if (fieldErrors.length > 0)
    throw new AppError(
      "VALIDATION_FAILED",
      `the custom step's tensors are invalid: ${fieldErrors.map((e) => `${e.path}: ${e.message}`).join("; ")}`,
      { fieldErrors },
    );
  return {
    maxBatchSize: given.maxBatchSize ?? declared?.maxBatchSize ?? 0,
    inputs: given.inputs ?? (declared!.inputs as StepModelTensor[]),
    outputs: given.outputs ?? (declared!.outputs as StepModelTensor[]),
  };
}

/** A stored step's tensors, read back from its config (the form signatureOf compares). */
function configSignature(config: ModelConfigJson): StepSignature {
  const tensor = (t: { name?: string; data_type?: string; dims?: number[] }): StepModelTensor => ({
    name: t.name ?? "",
    datatype: fromConfigDataType(t.data_type ?? "") as StepModelTensor["datatype"],
    dims: t.dims ?? [],
  });
  return {
    maxBatchSize: config.max_batch_size ?? 0,
    inputs: (config.input ?? []).map(tensor),
    outputs: (config.output ?? []).map(tensor),
  };
}

/** "x FP32 [4], mask BOOL [-1]" */
function describeTensors(tensors: ReadonlyArray<{ name: string; datatype: string; dims: readonly number[] }>): string {
  return tensors.map((t) => `${t.name} ${t.datatype} [${t.dims.join(",")}]`).join(", ");
}

/** Each file's path, size and SHA-256, for the audit event. */
function fileDigests(files: ReadonlyMap<string, Buffer>): Array<{ path: string; sizeBytes: number; sha256: string }> {
  return [...files].map(([path, data]) => ({
    path,
    sizeBytes: data.length,
    sha256: createHash("sha256").update(data).digest("hex"),
  }));
}

/** The uploaded files by path; VALIDATION_FAILED naming each bad one (and a missing model.ts). */
function decodeFiles(input: CreateCustomStepInput["files"]): Map<string, Buffer> {
  const fieldErrors: FieldError[] = [];
  const files = decodeUploadedFiles(
    input,
    {
      maxFiles: MAX_CUSTOM_STEP_FILES,
      maxFileBytes: MAX_CUSTOM_STEP_FILE_BYTES,
      refusePath: (path) =>
        path !== CUSTOM_STEP_ENTRY && CODE_FILE.test(path)
          ? `'${path}': a custom step's code is its one ${CUSTOM_STEP_ENTRY} (other files are data it reads)`
          : undefined,
    },
    fieldErrors,
  );
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

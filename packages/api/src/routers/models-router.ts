import { z } from "zod";
import { requireModelChanger } from "../services/ownership/ownership.js";
import { DATATYPES } from "@operon/protocol/datatypes";
import { isShadowModelName, SHADOW_NAME_RESERVED } from "@operon/protocol/shadow-models";
import type { ModelActor } from "../services/models/model-types.js";
import { adminProcedure, engineerProcedure, router, viewerProcedure } from "../trpc.js";
import { notFound } from "../app-error.js";
import { MAX_MODEL_VERSION } from "../services/models/model-versions.js";
import { stepCatalogView } from "../services/models/step-catalog-view.js";
import { configOfPbtxt, MAX_CONFIG_PBTXT_CHARS } from "../services/models/config-pbtxt-text.js";

/**
 * Models: viewers read (and try models through infer); engineers and admins
 * upload, load, unload, delete and edit configs. The work happens in
 * services/models/ (model-services.ts); each state change writes its audit event
 * (model.upload, model.load, model.unload, model.delete, model.updateConfig)
 * in the transaction of its database change.
 *
 * Upload flow: upload.begin -> upload.chunk (repeat, base64, in order) ->
 * upload.inspect (optional: the ONNX signature and a suggested config) ->
 * upload.finish (stores, loads; a config problem keeps the upload open so the
 * config can be fixed) or upload.abort.
 */

/** Triton model names as the model store accepts them (a folder name). */
const newModelName = z
  .string()
  .min(1, { error: "required" })
  .max(128, { error: "at most 128 characters" })
  .regex(/^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/, { error: "letters, digits, '_', '.' and '-' only, not starting with '.'" })
  // The console's page for uploading sits where this model's page would (/models/upload).
  .refine((name) => name !== "upload" && name !== "steps", {
    error: "'upload' and 'steps' are names of the console's pages under /models; choose another name",
  })
  .refine((name) => !isShadowModelName(name), { error: SHADOW_NAME_RESERVED });

/** Any model the gateway may list (repository models are named by their folders). */
const modelName = z.string().min(1, { error: "required" }).max(255);

const uploadId = z.uuid({ error: "not an upload id" });

/** A ModelConfig in Triton's JSON form (snake_case or camelCase keys, TYPE_* data types). */
const modelConfig = z.record(z.string(), z.unknown());

/** config.pbtxt as text, parsed by the API (configOfPbtxt) into the JSON form. */
const configPbtxtText = z.string().max(MAX_CONFIG_PBTXT_CHARS, { error: "at most 256 KiB of text" });

function modelActor(ctx: { user: { id: string }; actor: ModelActor["actor"] }): ModelActor {
  return { userId: ctx.user.id, actor: ctx.actor };
}

const stepTensor = z.object({
  name: z.string().min(1, { error: "required" }).max(256),
  datatype: z.enum(DATATYPES, { error: "must be a KServe datatype (FP32, INT64, BYTES, ...)" }),
  dims: z.array(z.int().min(-1, { error: "dims are integers >= -1" })).max(8, { error: "at most 8 dims" }),
});

export const modelsRouter = router({
  /** The built-in steps (names, docs, typed ports, parameter schemas) the editor offers. */
  stepCatalog: viewerProcedure.query(() => stepCatalogView()),

  /**
   * A model built from built-in steps, without code (services/models/step-models.ts):
   * checked whole before anything is stored, then stored, loaded and audited (model.steps.create, with SHA-256s).
   */
  createSteps: engineerProcedure
    .input(
      z.object({
        name: newModelName,
        description: z.string().max(2000).optional(),
        maxBatchSize: z.int().min(0).max(1024).optional(),
        inputs: z.array(stepTensor).min(1, { error: "at least one input" }).max(16),
        outputs: z.array(stepTensor).min(1, { error: "at least one output" }).max(16),
        pipeline: z.record(z.string(), z.unknown()),
        files: z
          .array(z.object({ path: z.string().max(128), data: z.string() }))
          .max(8, { error: "at most 8 files" })
          .optional(),
      }),
    )
    .mutation(({ ctx, input }) => ctx.services.models.steps.create(modelActor(ctx), input)),

  /**
   * A custom step: model.ts (type-checked first: problems come back as field errors at file:line:col) and the files
   * it reads, stored and loaded as a model that always runs sandboxed; audited (model.custom_step.create) with the
   * SHA-256 of model.ts and of each file. Engineers may, unless an admin restricted it (codeUploadPolicy).
   */
  createCustomStep: engineerProcedure
    .input(
      z.object({
        name: newModelName,
        description: z.string().max(2000).optional(),
        maxBatchSize: z.int().min(0).max(1024).optional(),
        // Default: what model.ts declares (export const operonSignature); given ones must match it.
        inputs: z.array(stepTensor).min(1, { error: "at least one input" }).max(16).optional(),
        outputs: z.array(stepTensor).min(1, { error: "at least one output" }).max(16).optional(),
        files: z
          .array(z.object({ path: z.string().max(128), data: z.string() }))
          .min(1, { error: "at least model.ts" })
          .max(8, { error: "at most 8 files" }),
      }),
    )
    .mutation(({ ctx, input }) =>
      ctx.services.models.customSteps.create({ ...modelActor(ctx), role: ctx.user.role }, input),
    ),

  /**
   * model.ts checked as an upload would be, nothing stored: its compile problems (model.ts:line:col) and the tensors
   * it declares (export const operonSignature; null when none), so the upload form is prefilled from the code.
   */
  inspectCustomStep: engineerProcedure
    .input(
      z.object({
        files: z
          .array(z.object({ path: z.string().max(128), data: z.string() }))
          .min(1, { error: "at least model.ts" })
          .max(8, { error: "at most 8 files" }),
      }),
    )
    .mutation(({ ctx, input }) => ctx.services.models.customSteps.inspect({ role: ctx.user.role }, input)),

  /**
   * The next version of a custom step (its owner or an admin; and only while code uploads are open to the caller's
   * role): model.ts type-checked first, then stored beside the earlier versions and served in their place; its
   * config (tensors, sandbox) stays. A version the gateway refuses is removed and the previous one keeps serving.
   * Audited as model.custom_step.version with the SHA-256 of each file.
   */
  addCustomStepVersion: engineerProcedure
    .input(
      z.object({
        name: modelName,
        files: z
          .array(z.object({ path: z.string().max(128), data: z.string() }))
          .min(1, { error: "at least model.ts" })
          .max(8, { error: "at most 8 files" }),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      await requireModelChanger(ctx.services.prisma, ctx.user, input.name);
      return ctx.services.models.customSteps.addVersion({ ...modelActor(ctx), role: ctx.user.role }, input);
    }),

  /** Whether only admins may upload code (custom steps); everyone signed in may read it. */
  codeUploadPolicy: viewerProcedure.query(({ ctx }) => ctx.services.models.codeUploads.get()),

  setCodeUploadPolicy: adminProcedure
    .input(z.object({ adminsOnly: z.boolean() }))
    .mutation(({ ctx, input }) => ctx.services.models.codeUploads.set(ctx.actor, input.adminsOnly)),

  /** Every model: uploads and the gateway's repository models, with live state from the gateway. */
  list: viewerProcedure.query(({ ctx }) => ctx.services.models.catalog.list()),

  /** One model with its config, tensors and statistics. */
  get: viewerProcedure
    .input(z.object({ name: modelName }))
    .query(({ ctx, input }) => ctx.services.models.catalog.get(input.name)),

  upload: router({
    /** Starts an upload; the version defaults to the next one after the model's existing versions. */
    begin: engineerProcedure
      .input(
        z.object({
          name: newModelName,
          fileName: z.string().min(1, { error: "required" }).max(255),
          sizeBytes: z.number().int().positive({ error: "must be at least 1 byte" }),
          sha256: z
            .string()
            .regex(/^[0-9a-fA-F]{64}$/, { error: "must be 64 hex characters (the file's SHA-256)" })
            .transform((hex) => hex.toLowerCase()),
          version: z
            .number()
            .int({ error: "a whole number" })
            .min(1, { error: "at least 1" })
            .max(MAX_MODEL_VERSION, { error: `at most ${MAX_MODEL_VERSION} (2^31−1)` })
            .optional(),
        }),
      )
      .mutation(async ({ ctx, input }) => {
        // A new version of an existing upload is a change to it: its owner's (or an admin's).
        await requireModelChanger(ctx.services.prisma, ctx.user, input.name);
        return ctx.services.models.uploads.beginUpload(modelActor(ctx), input);
      }),

    /** Appends base64 `data` (at most chunkBytes decoded) at `offset`, which must equal the bytes received so far. */
    chunk: engineerProcedure
      .input(z.object({ uploadId, offset: z.number().int().min(0), data: z.string() }))
      .mutation(({ ctx, input }) => ctx.services.models.uploads.uploadChunk(modelActor(ctx), input)),

    /** After the last byte: checks size and sha256, reads the ONNX signature, suggests a config. */
    inspect: engineerProcedure
      .input(z.object({ uploadId }))
      .mutation(({ ctx, input }) => ctx.services.models.uploads.inspectUpload(modelActor(ctx), input.uploadId)),

    /**
     * Stores the upload as a new version (with `config` as JSON or `configPbtxt` as config.pbtxt text, e.g. a Triton
     * model folder's; default the suggested one) and loads it.
     */
    finish: engineerProcedure
      .input(
        z
          .object({
            uploadId,
            description: z.string().trim().max(2000).optional(),
            config: modelConfig.optional(),
            configPbtxt: configPbtxtText.optional(),
          })
          .refine((input) => input.config === undefined || input.configPbtxt === undefined, {
            error: "give the config as JSON (config) or as config.pbtxt text (configPbtxt), not both",
            path: ["config"],
          }),
      )
      .mutation(async ({ ctx, input }) => {
        const { configPbtxt, ...rest } = input;
        const config = configPbtxt !== undefined ? configOfPbtxt(configPbtxt) : rest.config;
        return ctx.services.models.uploads.finishUpload(modelActor(ctx), {
          ...rest,
          ...(config !== undefined ? { config } : {}),
        });
      }),

    abort: engineerProcedure
      .input(z.object({ uploadId }))
      .mutation(({ ctx, input }) => ctx.services.models.uploads.abortUpload(modelActor(ctx), input.uploadId)),
  }),

  /** Load, unload, delete and config edits of an uploaded model: its owner or an admin (services/ownership). */
  load: engineerProcedure.input(z.object({ name: modelName })).mutation(async ({ ctx, input }) => {
    await requireModelChanger(ctx.services.prisma, ctx.user, input.name);
    return ctx.services.models.lifecycle.load(modelActor(ctx), input.name);
  }),

  unload: engineerProcedure.input(z.object({ name: modelName })).mutation(async ({ ctx, input }) => {
    await requireModelChanger(ctx.services.prisma, ctx.user, input.name);
    return ctx.services.models.lifecycle.unload(modelActor(ctx), input.name);
  }),

  /** Uploaded models only: unloads, then removes the files and rows. */
  delete: engineerProcedure.input(z.object({ name: modelName })).mutation(async ({ ctx, input }) => {
    await requireModelChanger(ctx.services.prisma, ctx.user, input.name);
    return ctx.services.models.lifecycle.delete(modelActor(ctx), input.name);
  }),

  /** Uploaded models only: validates, writes config.pbtxt, reloads; the previous config comes back if the gateway refuses. */
  updateConfig: engineerProcedure
    .input(
      z
        .object({
          name: modelName,
          /** Triton's JSON form of the config... */
          config: modelConfig.optional(),
          /** ...or config.pbtxt as Triton users write it (the console's editor, an uploaded file). */
          configPbtxt: configPbtxtText.optional(),
        })
        .refine((input) => (input.config === undefined) !== (input.configPbtxt === undefined), {
          error: "give the config as JSON (config) or as config.pbtxt text (configPbtxt), not both",
          path: ["config"],
        }),
    )
    .mutation(async ({ ctx, input }) => {
      await requireModelChanger(ctx.services.prisma, ctx.user, input.name);
      const config = input.config ?? configOfPbtxt(input.configPbtxt!, input.name);
      return ctx.services.models.configEdit.updateConfig(modelActor(ctx), input.name, config);
    }),

  /** One KServe v2 JSON inference (the console's try-it panel); flat `data` in row-major order. */
  infer: viewerProcedure
    .input(
      z.object({
        name: modelName,
        version: z.number().int().min(1).optional(),
        inputs: z
          .array(
            z.object({
              name: z.string().min(1),
              datatype: z.enum(DATATYPES),
              shape: z.array(z.number().int().min(0)).max(16),
              data: z.array(z.union([z.number(), z.string(), z.boolean()])).max(1_000_000),
              encoding: z.literal("base64").optional(),
            }),
          )
          .min(1, { error: "give at least one input" })
          .max(64),
        outputs: z.array(z.string().min(1)).max(64).optional(),
      }),
    )
    .mutation(({ ctx, input }) => {
      // The proxy calls the gateway with the control plane's own key, which shadow models answer: they are the search's alone.
      if (isShadowModelName(input.name)) throw notFound(`model '${input.name}'`);
      return ctx.services.models.inferProxy.infer(input.name, input);
    }),
});

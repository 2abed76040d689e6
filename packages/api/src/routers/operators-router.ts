import { z } from "zod";
import { requireOperatorChanger } from "../services/ownership/ownership.js";
import { engineerProcedure, router, viewerProcedure } from "../trpc.js";

/**
 * Operators: DAGs of model calls served by the gateway like models.
 * Viewers read; engineers and admins create, update, delete and try them.
 * The spec format is @operon/operator-spec's; the gateway checks it against the models it serves.
 */
export const operatorName = z
  .string()
  .trim()
  .min(1, { error: "required" })
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, {
    error: "letters, digits, '_', '.' and '-' only, starting with a letter or digit",
  });

/** The name of an operator being created: not "new", which is the console's page for creating one (/operators/new). */
const newOperatorName = operatorName.refine((name) => name !== "new", {
  error: "'new' is the name of the console's page for new operators; choose another name",
});

/** An operator spec (JSON object): inputs, outputs, steps, optional maxBatchSize / maxInflightPerStep; its name is the operator's. */
const spec = z.record(z.string(), z.unknown(), { error: "the spec must be a JSON object" });

const description = z.string().trim().max(2000).optional();

/** One KServe v2 JSON input tensor, as the gateway's infer endpoint takes it. */
const inputTensor = z.object({
  name: z.string().min(1),
  datatype: z.string().min(1).max(16),
  shape: z.array(z.number().int().min(0)).max(16),
  data: z.array(z.unknown()).max(1_000_000),
  parameters: z.record(z.string(), z.unknown()).optional(),
  /** "base64": a BYTES input's elements are base64 of raw files (Try it's file picker), sent as binary data. */
  encoding: z.literal("base64").optional(),
});

export const operatorsRouter = router({
  /** Stored operators (latest version) and the gateway's other operators (repository ensembles: source "repository"), with the gateway's state. */
  list: viewerProcedure.query(({ ctx }) => ctx.services.operators.list()),

  /** Spec, description, versions (newest first), owner and served state. */
  get: viewerProcedure
    .input(z.object({ name: operatorName }))
    .query(({ ctx, input }) => ctx.services.operators.get(input.name)),

  versions: viewerProcedure
    .input(z.object({ name: operatorName }))
    .query(({ ctx, input }) => ctx.services.operators.versions(input.name)),

  /**
   * The gateway's dry run against the models it serves now: cycles, unknown
   * models and tensors, dtype/shape mismatches between connected steps...
   * → { valid, problems: [{ path?, code?, message }] }. Registers nothing.
   */
  validate: viewerProcedure.input(z.object({ name: operatorName.optional(), spec })).mutation(({ ctx, input }) => {
    const named = typeof input.spec["name"] === "string" && input.spec["name"] !== "" ? input.spec["name"] : undefined;
    return ctx.services.operators.validate(input.name ?? named ?? "draft", input.spec);
  }),

  /** Validates, registers with the gateway, then stores version 1; nothing is stored when the gateway refuses. */
  create: engineerProcedure
    .input(z.object({ name: newOperatorName, description, spec }))
    .mutation(({ ctx, input }) => ctx.services.operators.create(ctx.actor, input)),

  /** Stores the spec as the next version and serves it. */
  update: engineerProcedure
    .input(z.object({ name: operatorName, description, spec }))
    .mutation(async ({ ctx, input }) => {
      await requireOperatorChanger(ctx.services.prisma, ctx.user, input.name);
      return ctx.services.operators.update(ctx.actor, input);
    }),

  delete: engineerProcedure.input(z.object({ name: operatorName })).mutation(async ({ ctx, input }) => {
    await requireOperatorChanger(ctx.services.prisma, ctx.user, input.name);
    await ctx.services.operators.delete(ctx.actor, input.name);
    return { ok: true as const };
  }),

  /**
   * One inference with each step's timing and outputs: { outputs, latencyMs, steps: [{ name, kind, model, status,
   * startUs, endUs, durationUs, outputs: [{ name, datatype, shape, data, truncated }] }] }; step outputs are a
   * debugging view cut to their first 256 values (truncated), not the operator's answer.
   */
  tryRun: engineerProcedure
    .input(
      z.object({
        name: operatorName,
        inputs: z.array(inputTensor).min(1, { error: "give at least one input tensor" }).max(64),
        parameters: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
      }),
    )
    .mutation(({ ctx, input }) => ctx.services.operators.tryRun(input.name, input.inputs, input.parameters)),
});

import { z } from "zod";
import { hostFacts } from "../services/costs/host-facts.js";
import { adminProcedure, router, viewerProcedure } from "../trpc.js";

/**
 * Hardware profiles: what hosts are and cost. Everyone reads; only admins
 * write. Exactly one profile is the default (the host the gateway runs on),
 * and usage samples are costed with it.
 */
const bytes = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

const fields = {
  name: z.string().trim().min(1, { error: "required" }).max(100),
  kind: z.enum(["CPU", "GPU"]),
  cpuCores: z.number().int().min(1).max(4096).nullable().optional(),
  memoryBytes: bytes.nullable().optional(),
  gpuModel: z.string().trim().min(1).max(100).nullable().optional(),
  gpuCount: z.number().int().min(0).max(1024).optional(),
  gpuMemoryBytes: bytes.nullable().optional(),
  /** Share of costPerHour that pays for the GPUs (cost-model.ts); null = the default. Ignored on CPU profiles. */
  gpuPriceShare: z.number().min(0).max(1).nullable().optional(),
  /** Stored with 4 decimals (Decimal(12,4)). */
  costPerHour: z.number().min(0).max(99_999_999),
  /** ISO 4217 code, e.g. USD. */
  currency: z
    .string()
    .trim()
    .toUpperCase()
    .regex(/^[A-Z]{3}$/, { error: "a three-letter currency code such as USD" }),
};

const profileId = z.uuid();

export const hardwareRouter = router({
  /** The default profile first; costs as numbers, byte sizes as numbers. */
  list: viewerProcedure.query(({ ctx }) => ctx.services.hardware.list()),

  /** The host's name, cores and memory: a new profile starts from them (the host the gateway runs on). */
  host: viewerProcedure.query(() => hostFacts()),

  /** The first profile created becomes the default. */
  create: adminProcedure
    .input(z.object({ ...fields, currency: fields.currency.default("USD") }))
    .mutation(({ ctx, input }) => ctx.services.hardware.create(ctx.actor, input)),

  /** Changes the fields given. */
  update: adminProcedure
    .input(
      z.object({
        id: profileId,
        name: fields.name.optional(),
        kind: fields.kind.optional(),
        cpuCores: fields.cpuCores,
        memoryBytes: fields.memoryBytes,
        gpuModel: fields.gpuModel,
        gpuCount: fields.gpuCount,
        gpuMemoryBytes: fields.gpuMemoryBytes,
        gpuPriceShare: fields.gpuPriceShare,
        costPerHour: fields.costPerHour.optional(),
        currency: fields.currency.optional(),
      }),
    )
    .mutation(({ ctx, input }) => {
      const { id, ...change } = input;
      return ctx.services.hardware.update(ctx.actor, id, change);
    }),

  /** CONFLICT for the default profile while others exist. */
  delete: adminProcedure.input(z.object({ id: profileId })).mutation(async ({ ctx, input }) => {
    await ctx.services.hardware.delete(ctx.actor, input.id);
    return { ok: true as const };
  }),

  setDefault: adminProcedure
    .input(z.object({ id: profileId }))
    .mutation(({ ctx, input }) => ctx.services.hardware.setDefault(ctx.actor, input.id)),
});

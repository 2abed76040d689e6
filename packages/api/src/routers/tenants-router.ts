import { z } from "zod";
import { AppError } from "../app-error.js";
import { adminProcedure, router } from "../trpc.js";

/**
 * Tenants for traffic shares (services/tenants/tenant-groups.ts). Admins
 * only, reads included: the listing names everyone's keys and owners.
 */
const MAX_RANGE_MS = 31 * 86_400_000;

/** The shares a tenant may have (README "Tenant traffic shares"). */
export const TENANT_SHARE_RANGE = { min: 0.001, max: 1000 } as const;

const fields = {
  name: z.string().trim().min(1, { error: "required" }).max(100, { error: "at most 100 characters" }),
  description: z.string().trim().max(500, { error: "at most 500 characters" }),
  // A weight: 0.001 to 1000 keeps any two tenants within a ratio of 10^6. A share of 1e-300 gave its
  // lane virtual tags so large that, after it stopped, the other tenants starved behind its arithmetic.
  share: z
    .number({ error: "a number" })
    .finite({ error: "a finite number" })
    .min(TENANT_SHARE_RANGE.min, { error: `at least ${TENANT_SHARE_RANGE.min}` })
    .max(TENANT_SHARE_RANGE.max, { error: `at most ${TENANT_SHARE_RANGE.max}` }),
  policy: z.enum(["QUEUE", "REFUSE"], { error: "QUEUE (wait at a lower priority) or REFUSE (429 with Retry-After)" }),
};

export const tenantsRouter = router({
  /** Groups, owners of keys outside a group, and the anonymous tenant, each with its share, policy and keys. */
  list: adminProcedure.query(({ ctx }) => ctx.services.tenants.list()),

  create: adminProcedure
    .input(
      z.object({
        name: fields.name,
        description: fields.description.default(""),
        share: fields.share,
        policy: fields.policy.default("QUEUE"),
      }),
    )
    .mutation(({ ctx, input }) => ctx.services.tenants.create(ctx.actor, input)),

  /** Changes the fields given. */
  update: adminProcedure
    .input(
      z.object({
        id: z.uuid(),
        name: fields.name.optional(),
        description: fields.description.optional(),
        share: fields.share.optional(),
        policy: fields.policy.optional(),
      }),
    )
    .mutation(({ ctx, input }) => {
      const { id, ...change } = input;
      return ctx.services.tenants.update(
        ctx.actor,
        id,
        Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined)),
      );
    }),

  /** Its keys count for their owners again; deleting the last group turns traffic shares off. */
  delete: adminProcedure.input(z.object({ id: z.uuid() })).mutation(async ({ ctx, input }) => {
    await ctx.services.tenants.remove(ctx.actor, input.id);
    return { ok: true as const };
  }),

  /** Puts an API key in a tenant group; tenantId null gives it back to its owner. */
  assignKey: adminProcedure
    .input(z.object({ keyId: z.uuid(), tenantId: z.uuid().nullable() }))
    .mutation(async ({ ctx, input }) => {
      await ctx.services.tenants.assignKey(ctx.actor, input.keyId, input.tenantId);
      return { ok: true as const };
    }),

  /** Each tenant's use against its share over a range (at most 31 days). */
  usage: adminProcedure
    .input(
      z.object({
        from: z.coerce.date({ error: "a date (ISO 8601)" }),
        to: z.coerce.date({ error: "a date (ISO 8601)" }),
      }),
    )
    .query(({ ctx, input }) => {
      if (input.to.getTime() <= input.from.getTime())
        throw new AppError("VALIDATION_FAILED", "'to' must be after 'from'", {
          fieldErrors: [{ path: "to", message: "must be after from" }],
        });
      if (input.to.getTime() - input.from.getTime() > MAX_RANGE_MS) {
        throw new AppError("VALIDATION_FAILED", "the range is longer than 31 days", {
          fieldErrors: [{ path: "from", message: "at most 31 days before to" }],
        });
      }
      return ctx.services.tenants.usage(input.from, input.to);
    }),
});

import { z } from "zod";
import { API_KEY_SCOPES } from "@operon/protocol/api-keys";
import { AppError } from "../app-error.js";
import { engineerProcedure, hasRole, router } from "../trpc.js";

export const apiKeysRouter = router({
  /** Your keys; admins may ask for everyone's (`all: true`). */
  list: engineerProcedure
    .input(
      z
        .object({ all: z.boolean().default(false), includeRevoked: z.boolean().default(false) })
        .default({ all: false, includeRevoked: false }),
    )
    .query(({ ctx, input }) => {
      if (input.all && !hasRole(ctx.user, "ADMIN"))
        throw new AppError("FORBIDDEN", "only admins may list everyone's keys");
      return ctx.services.apiKeys.list({
        ...(input.all ? {} : { ownerId: ctx.user.id }),
        includeRevoked: input.includeRevoked,
      });
    }),

  /** The key is in the answer once; only its hash is kept. */
  create: engineerProcedure
    .input(
      z.object({
        name: z.string().trim().min(1, { error: "required" }).max(100),
        scopes: z.array(z.enum(API_KEY_SCOPES)).min(1, { error: "pick at least one scope" }),
        expiresAt: z.coerce.date().optional(),
        priorityLevel: z.number().int().min(0).max(1_000_000).optional(),
        qpsQuota: z.number().int().positive().max(1_000_000).optional(),
      }),
    )
    .mutation(({ ctx, input }) => {
      if (input.scopes.includes("admin") && !hasRole(ctx.user, "ADMIN")) {
        throw new AppError("FORBIDDEN", "only admins may create keys with the admin scope", {
          fieldErrors: [{ path: "scopes", message: "admin scope needs the admin role" }],
        });
      }
      return ctx.services.apiKeys.create(ctx.actor, ctx.user.id, {
        name: input.name,
        scopes: input.scopes,
        expiresAt: input.expiresAt ?? null,
        ...(input.priorityLevel !== undefined ? { priorityLevel: input.priorityLevel } : {}),
        qpsQuota: input.qpsQuota ?? null,
      });
    }),

  revoke: engineerProcedure
    .input(z.object({ id: z.uuid() }))
    .mutation(({ ctx, input }) =>
      ctx.services.apiKeys.revoke(
        ctx.actor,
        input.id,
        (ownerId) => ownerId === ctx.user.id || hasRole(ctx.user, "ADMIN"),
      ),
    ),
});

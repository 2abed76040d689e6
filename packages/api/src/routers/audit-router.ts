import { z } from "zod";
import { auditSnapshot } from "../services/audit/audit-log.js";
import { auditTargetNames } from "../services/audit/audit-target-names.js";
import { adminProcedure, router } from "../trpc.js";

export const auditRouter = router({
  /** Newest first, filtered; page with `cursor` (the last id of the previous page). */
  list: adminProcedure
    .input(
      z
        .object({
          actorId: z.uuid().optional(),
          action: z.string().max(100).optional(),
          targetType: z.string().max(100).optional(),
          targetId: z.string().max(200).optional(),
          from: z.coerce.date().optional(),
          to: z.coerce.date().optional(),
          limit: z.number().int().min(1).max(500).default(100),
          cursor: z.string().regex(/^\d+$/).optional(),
        })
        .default({ limit: 100 }),
    )
    .query(async ({ ctx, input }) => {
      const rows = await ctx.services.prisma.auditEvent.findMany({
        where: {
          ...(input.actorId ? { actorId: input.actorId } : {}),
          ...(input.action ? { action: { startsWith: input.action } } : {}),
          ...(input.targetType ? { targetType: input.targetType } : {}),
          ...(input.targetId ? { targetId: input.targetId } : {}),
          ...(input.from || input.to
            ? { at: { ...(input.from ? { gte: input.from } : {}), ...(input.to ? { lte: input.to } : {}) } }
            : {}),
          ...(input.cursor ? { id: { lt: BigInt(input.cursor) } } : {}),
        },
        include: { actor: { select: { email: true } } },
        orderBy: { id: "desc" },
        take: input.limit,
      });
      const names = await auditTargetNames(ctx.services.prisma, rows);
      const events = rows.map((row) => ({
        id: row.id.toString(),
        at: row.at,
        actorId: row.actorId,
        actorEmail: row.actor?.email ?? null,
        apiKeyId: row.apiKeyId,
        action: row.action,
        targetType: row.targetType,
        targetId: row.targetId,
        /** The target's name (a key's or model's name, a user's email) when it is known. */
        targetName: row.targetId ? (names.get(`${row.targetType}:${row.targetId}`) ?? null) : null,
        before: auditSnapshot(row.before) ?? null,
        after: auditSnapshot(row.after) ?? null,
        ip: row.ip,
      }));
      return { events, nextCursor: rows.length === input.limit ? events[events.length - 1]!.id : null };
    }),
});

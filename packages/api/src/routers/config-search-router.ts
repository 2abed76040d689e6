import { z } from "zod";
import { requireConfigSearchChanger, requireModelChanger } from "../services/ownership/ownership.js";
import { engineerProcedure, router, viewerProcedure } from "../trpc.js";

/**
 * Config searches (services/config-search): viewers read searches and
 * their candidates; engineers and admins, who may start perf runs, start,
 * cancel and apply them (apply edits the model's config, as updateConfig
 * does for them).
 */
const searchId = z.object({ id: z.uuid({ error: "not a config search id" }) });

const modelName = z.string().trim().min(1, { error: "required" }).max(255);

export const configSearchRouter = router({
  /**
   * Starts a search of an uploaded model → { id } of a RUNNING search.
   * CONFLICT while a perf run or another search holds the perf slot;
   * NOT_FOUND for a model that is not an upload; VALIDATION_FAILED for the
   * cost objective without a default hardware profile.
   */
  start: engineerProcedure
    .input(
      z.object({
        model: modelName,
        objective: z.enum(["MAX_THROUGHPUT", "MIN_COST"]),
        /** The p99 latency a recommended config must stay within. */
        p99BudgetMs: z.number().positive({ error: "above 0" }).max(600_000),
        bounds: z
          .object({
            maxInstances: z.number().int().min(1).max(64).optional(),
            maxBatchSize: z.number().int().min(0).max(1024).optional(),
            queueDelaysUs: z.array(z.number().int().min(0).max(1_000_000)).min(1).max(8).optional(),
            minGainPercent: z.number().min(0).max(100).optional(),
            maxCandidates: z.number().int().min(1).max(50).optional(),
            maxDurationMs: z
              .number()
              .int()
              .min(1000)
              .max(4 * 3600_000)
              .optional(),
          })
          .optional(),
        measurement: z
          .object({
            maxConcurrency: z.number().int().min(1).max(256).optional(),
            measurementIntervalMs: z.number().int().min(100).max(60_000).optional(),
            maxTrials: z.number().int().min(3).max(20).optional(),
          })
          .optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      // A search loads shadows of the model and may change its config: the model's owner's (or an admin's).
      await requireModelChanger(ctx.services.prisma, ctx.user, input.model);
      return ctx.services.configSearches.start(ctx.actor, input);
    }),

  /** Stops the search; the candidates it measured are kept and the shadow model is unloaded. */
  cancel: engineerProcedure.input(searchId).mutation(async ({ ctx, input }) => {
    await requireConfigSearchChanger(ctx.services.prisma, ctx.user, input.id);
    return ctx.services.configSearches.cancel(ctx.actor, input.id, ctx.user.email);
  }),

  /** Searches newest first, without candidates. */
  list: viewerProcedure
    .input(
      z
        .object({ model: modelName.optional(), limit: z.number().int().min(1).max(200).default(50) })
        .default({ limit: 50 }),
    )
    .query(({ ctx, input }) => ctx.services.configSearches.list(input)),

  /** The search (with the candidate being measured while it runs) and every candidate, Pareto front marked. */
  get: viewerProcedure.input(searchId).query(({ ctx, input }) => ctx.services.configSearches.get(input.id)),

  /** Makes candidate `index` (default: the recommended one) the model's config, as a config edit does; audited with the search. */
  applyCandidate: engineerProcedure
    .input(searchId.extend({ index: z.number().int().min(0).max(1000).optional() }))
    .mutation(async ({ ctx, input }) => {
      await requireConfigSearchChanger(ctx.services.prisma, ctx.user, input.id);
      const search = await ctx.services.prisma.configSearch.findUnique({
        where: { id: input.id },
        select: { modelName: true },
      });
      if (search !== null) await requireModelChanger(ctx.services.prisma, ctx.user, search.modelName);
      return ctx.services.configSearches.apply({ userId: ctx.user.id, actor: ctx.actor }, input.id, input.index);
    }),
});

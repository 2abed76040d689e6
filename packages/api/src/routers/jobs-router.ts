import { z } from "zod";
import { inputMappingSchema } from "../services/batch/input-mapping.js";
import { engineerProcedure, router } from "../trpc.js";

/**
 * Batch jobs (services/batch/batch-jobs.ts): engineers start and manage
 * their own jobs, admins all of them; another engineer's job is NOT_FOUND.
 */
const id = z.object({ id: z.uuid() });

export const jobsRouter = router({
  list: engineerProcedure.query(({ ctx }) => ctx.services.batchJobs.list(ctx.user)),
  /** With the job's cost so far (costs/job-cost.ts) unless `cost: false` (a client polling progress, e.g. the CLI). */
  get: engineerProcedure
    .input(z.object({ id: z.uuid(), cost: z.boolean().default(true) }))
    .query(({ ctx, input }) => ctx.services.batchJobs.get(ctx.user, input.id, input.cost)),
  throughput: engineerProcedure
    .input(id)
    .query(({ ctx, input }) => ctx.services.batchJobs.throughput(ctx.user, input.id)),
  failures: engineerProcedure
    .input(z.object({ id: z.uuid(), take: z.number().int().min(1).max(1000).default(100) }))
    .query(({ ctx, input }) => ctx.services.batchJobs.failures(ctx.user, input.id, input.take)),

  create: engineerProcedure
    .input(
      z.object({
        datasetId: z.uuid(),
        target: z.object({
          kind: z.enum(["MODEL", "OPERATOR"]),
          name: z.string().min(1).max(128),
          version: z.string().regex(/^\d+$/, { error: "a version number" }).optional(),
        }),
        mapping: inputMappingSchema.optional(),
        outputs: z.array(z.string().min(1).max(128)).max(64).optional(),
        /** Rows one request carries; checked against the target's max_batch_size (rows-per-request.ts). */
        rowsPerRequest: z.number().int().min(1).optional(),
      }),
    )
    .mutation(({ ctx, input }) => ctx.services.batchJobs.create(ctx.actor, ctx.user, input)),

  pause: engineerProcedure
    .input(id)
    .mutation(({ ctx, input }) => ctx.services.batchJobs.pause(ctx.actor, ctx.user, input.id)),
  resume: engineerProcedure
    .input(id)
    .mutation(({ ctx, input }) => ctx.services.batchJobs.resume(ctx.actor, ctx.user, input.id)),
  cancel: engineerProcedure
    .input(id)
    .mutation(({ ctx, input }) => ctx.services.batchJobs.cancel(ctx.actor, ctx.user, input.id)),
  retryFailed: engineerProcedure
    .input(id)
    .mutation(({ ctx, input }) => ctx.services.batchJobs.retryFailed(ctx.actor, ctx.user, input.id)),
  registerResult: engineerProcedure
    .input(
      z.object({
        id: z.uuid(),
        name: z
          .string()
          .trim()
          .min(1)
          .max(100)
          .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/),
      }),
    )
    .mutation(({ ctx, input }) => ctx.services.batchJobs.registerResult(ctx.actor, ctx.user, input.id, input.name)),
  delete: engineerProcedure.input(id).mutation(async ({ ctx, input }) => {
    await ctx.services.batchJobs.remove(ctx.actor, ctx.user, input.id);
    return { ok: true as const };
  }),
});

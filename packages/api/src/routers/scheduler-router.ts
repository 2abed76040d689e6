import { z } from "zod";
import { adminProcedure, router, viewerProcedure } from "../trpc.js";
import { operatorName } from "./operators-router.js";

/**
 * The resource scheduler (services/resource-scheduler): its decisions and
 * the models as it last saw them for everyone signed in; the switch and
 * pins for admins (each audited).
 */
const modelName = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, { error: "a model name: letters, digits, '_', '.', '-' (at most 128)" });

export const schedulerRouter = router({
  /** On/off, the policy and budget in force, each model's instances, demand and capacity, and the pins. */
  status: viewerProcedure.query(({ ctx }) => ctx.services.resourceScheduler.status()),

  /**
   * One operator's capacity (GroupAssign): per model step its per-instance throughput at the p99 budget, instances,
   * calls per operator request and capacity in operator requests/s; the operator's capacity (the least) and its
   * bottleneck steps; the demand the last period sized it for. NOT_FOUND when the gateway does not serve it.
   */
  operatorCapacity: viewerProcedure
    .input(z.object({ name: operatorName }))
    .query(({ ctx, input }) => ctx.services.resourceScheduler.operatorCapacity(input.name)),

  /** Decisions newest first, optionally of one model or caused by one operator; page back with `before` (the last id of a page). */
  decisions: viewerProcedure
    .input(
      z.object({
        model: modelName.optional(),
        operator: operatorName.optional(),
        limit: z.number().int().min(1).max(200).default(50),
        before: z
          .string()
          .regex(/^\d{1,19}$/, { error: "a decision id" })
          .optional(),
      }),
    )
    .query(({ ctx, input }) => ctx.services.resourceScheduler.decisions(input)),

  /** Turns the scheduler on or off for good (stored; a restart keeps it). */
  setEnabled: adminProcedure
    .input(z.object({ enabled: z.boolean() }))
    .mutation(({ ctx, input }) => ctx.services.resourceScheduler.setEnabled(ctx.actor, input.enabled)),

  /** Keeps a model at `count` instances whatever its demand. */
  pin: adminProcedure
    .input(z.object({ model: modelName, count: z.number().int().min(1).max(1024) }))
    .mutation(({ ctx, input }) => ctx.services.resourceScheduler.pin(ctx.actor, input.model, input.count)),

  unpin: adminProcedure
    .input(z.object({ model: modelName }))
    .mutation(({ ctx, input }) => ctx.services.resourceScheduler.unpin(ctx.actor, input.model)),
});

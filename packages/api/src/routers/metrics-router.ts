import { z } from "zod";
import { currentUsage, usageCosts, usageTimeSeries } from "../services/usage/usage-metrics.js";
import { router, viewerProcedure } from "../trpc.js";

/**
 * Usage and cost, for the console's dashboards. Everything here is read-only
 * and open to viewers. Ranges are [from, to); dates as ISO strings or Dates.
 */
const range = {
  from: z.coerce.date({ error: "a date (ISO 8601)" }),
  to: z.coerce.date({ error: "a date (ISO 8601)" }),
};

export const metricsRouter = router({
  /**
   * Points per bucket, overall and per model: requests/s, errors/s, error
   * rate, p50/p95/p99 ms, queue ms, instances, CPU utilization (0..1 of the
   * host), memory bytes. bucketSecs defaults to a round size giving ≤ ~120 points.
   */
  timeSeries: viewerProcedure
    .input(
      z.object({
        ...range,
        model: z.string().trim().min(1).max(128).optional(),
        bucketSecs: z
          .number()
          .int()
          .min(1)
          .max(30 * 86_400)
          .optional(),
      }),
    )
    .query(({ ctx, input }) => usageTimeSeries(ctx.services.prisma, input)),

  /** Live per-model numbers from the gateway (statistics, workers, latency summaries) plus each version's last sample. */
  current: viewerProcedure.query(({ ctx }) =>
    currentUsage(ctx.services.prisma, ctx.services.gateway, ctx.services.logger),
  ),

  /**
   * Per model and hardware profile: inferences, cost, cost per hour, cost per
   * 1,000 inferences, and each profile's unattributed (idle) cost. The host's
   * cost is attributed by CPU share (services/cost-model.ts).
   */
  costs: viewerProcedure.input(z.object(range)).query(({ ctx, input }) => usageCosts(ctx.services.prisma, input)),
});

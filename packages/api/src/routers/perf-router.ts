import { z } from "zod";
import { engineerProcedure, router, viewerProcedure } from "../trpc.js";

/**
 * Perf runs (the `operon perf` engine against the gateway, in the
 * background, one at a time). Viewers read reports and progress; engineers
 * and admins start, cancel and delete runs.
 */
const reportId = z.object({ id: z.uuid() });

const count = (max: number) => z.number().int().min(1).max(max);

export const perfRouter = router({
  /**
   * Checks the target and starts measuring: → { id } of a RUNNING report.
   * CONFLICT while another run is going; NOT_FOUND when the gateway does not
   * serve the target. Only HTTP: the control plane knows the gateway's HTTP
   * address alone (gRPC runs: `operon perf -i grpc`).
   */
  start: engineerProcedure
    .input(
      z.object({
        target: z.object({
          kind: z.enum(["MODEL", "OPERATOR"]),
          name: z.string().trim().min(1, { error: "required" }).max(128),
          version: z.string().trim().regex(/^\d+$/, { error: "a version number" }).optional(),
        }),
        concurrency: z
          .object({ start: count(1024), end: count(1024), step: count(1024).default(1) })
          .refine((range) => range.end >= range.start, { error: "end must be at least start", path: ["end"] }),
        batchSize: count(1024).default(1),
        measurementIntervalMs: z.number().int().min(100).max(600_000).default(5000),
        /** Windows per step at most, until the last three agree (perf_analyzer's --max-trials). */
        maxTrials: z.number().int().min(3).max(50).optional(),
        protocol: z.literal("http").default("http"),
      }),
    )
    .mutation(({ ctx, input }) => ctx.services.perfRuns.start(ctx.actor, input)),

  /** { status, completedSteps, totalSteps, currentConcurrency, percent, error }: poll it while the run goes. */
  progress: viewerProcedure.input(reportId).query(({ ctx, input }) => ctx.services.perfRuns.progress(input.id)),

  /** Stops the run; the steps it completed are kept and the report ends CANCELLED. */
  cancel: engineerProcedure.input(reportId).mutation(({ ctx, input }) => ctx.services.perfRuns.cancel(ctx.actor, input.id, ctx.user.email)),

  /** Reports newest first, without samples. */
  list: viewerProcedure
    .input(z.object({ targetName: z.string().trim().min(1).max(128).optional(), limit: z.number().int().min(1).max(500).default(100) }).default({ limit: 100 }))
    .query(({ ctx, input }) => ctx.services.perfRuns.list(input)),

  /** The report and its samples by ascending concurrency (throughput vs latency; Triton's perf table rows in summary.steps). */
  get: viewerProcedure.input(reportId).query(({ ctx, input }) => ctx.services.perfRuns.get(input.id)),

  delete: engineerProcedure.input(reportId).mutation(async ({ ctx, input }) => {
    await ctx.services.perfRuns.delete(ctx.actor, input.id);
    return { ok: true as const };
  }),
});

import { z } from "zod";
import { requireModelChanger, requireOperatorChanger, requirePerfRunChanger } from "../services/ownership/ownership.js";
import { PERF_INPUT_LIMITS } from "../services/perf/perf-inputs.js";
import { MAX_IMPORTED_CSV_BYTES } from "../services/perf/perf-imports.js";
import { adminProcedure, engineerProcedure, router, viewerProcedure } from "../trpc.js";
import { AUTO_PERF_LIMITS } from "../services/perf/auto-perf-settings.js";

/**
 * Perf runs (the `operon perf` engine against the gateway, in the
 * background, from a queue, one at a time). Viewers read reports, progress,
 * the queue and the automatic plan; engineers and admins start, cancel and
 * delete runs; admins change the plan of automatic runs.
 */
const reportId = z.object({ id: z.uuid() });

const count = (max: number) => z.number().int().min(1).max(max);

const target = z.object({
  kind: z.enum(["MODEL", "OPERATOR"]),
  name: z.string().trim().min(1, { error: "required" }).max(128),
});

const bounded = (key: keyof typeof AUTO_PERF_LIMITS, integer: boolean) => {
  const [min, max] = AUTO_PERF_LIMITS[key];
  return (integer ? z.number().int() : z.number()).min(min).max(max).optional();
};

/** Dims without the batch dimension: whole numbers >= 1 (0 would send empty tensors), at most 8 of them. */
const dims = z.array(z.number().int().min(1).max(1_000_000)).max(8);

export const perfRouter = router({
  /**
   * How runs fill the target's inputs: per input its declared shape, the dims
   * runs use (saved, or suggested for variable dims) and the sample data
   * (random, zero, or a data file). NOT_FOUND when the gateway does not serve it.
   */
  inputs: viewerProcedure.input(target).query(({ ctx, input }) => ctx.services.perfInputs.view(input)),

  /**
   * The target's owner (or an admin; any engineer for a repository model)
   * saves the shapes and sample data every later run of it uses, manual,
   * automatic and config searches alike. `data.json` is perf_analyzer's
   * --input-data JSON (at most 4 MiB); it is checked against the model's
   * inputs before it is saved. Audited (perf.inputs).
   */
  setInputs: engineerProcedure
    .input(
      z.object({
        target,
        shapes: z.record(z.string().min(1).max(256), dims).refine((shapes) => Object.keys(shapes).length <= 64, {
          error: "at most 64 inputs",
        }),
        data: z.discriminatedUnion("kind", [
          z.object({ kind: z.literal("random") }),
          z.object({ kind: z.literal("zero") }),
          /** Keeps the data file saved before (only the shapes change). */
          z.object({ kind: z.literal("keep") }),
          z.object({
            kind: z.literal("file"),
            name: z.string().trim().min(1).max(256),
            json: z.string().max(PERF_INPUT_LIMITS.maxSampleBytes, { error: "at most 4 MiB" }),
          }),
        ]),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      if (input.target.kind === "MODEL") await requireModelChanger(ctx.services.prisma, ctx.user, input.target.name);
      else await requireOperatorChanger(ctx.services.prisma, ctx.user, input.target.name);
      return ctx.services.perfInputs.update(ctx.actor, input.target, { shapes: input.shapes, data: input.data });
    }),

  /**
   * Checks the target and queues the run: → { id, status: "QUEUED", joined }.
   * It starts when the runs ahead of it have ended (progress tells its place);
   * a request equal to one already queued joins it (joined: true). NOT_FOUND
   * when the gateway does not serve the target. Only HTTP: the control plane
   * knows the gateway's HTTP address alone (gRPC runs: `operon perf -i grpc`).
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

  /**
   * Reads a perf_analyzer CSV (`perf_analyzer -f`, `operon perf -f`) as a
   * finished report of the target (trigger IMPORTED), for measurements made
   * elsewhere. Only concurrency sweeps; at most 1 MiB and 1,024 rows. The
   * target's owner or an admin (any engineer for a repository model), as for
   * its perf inputs. `instanceCount`: how many instances served it (the
   * scheduler's per-instance capacity divides by it). Audited (perf.import).
   */
  importCsv: engineerProcedure
    .input(
      z.object({
        target: z.object({
          kind: z.enum(["MODEL", "OPERATOR"]),
          name: z.string().trim().min(1, { error: "required" }).max(128),
          version: z.string().trim().regex(/^\d+$/, { error: "a version number" }).optional(),
        }),
        fileName: z.string().trim().min(1, { error: "required" }).max(256),
        csv: z.string().max(MAX_IMPORTED_CSV_BYTES, { error: "at most 1 MiB" }),
        instanceCount: z.number().int().min(1).max(1024).default(1),
        /** The profile it was measured on; default the default profile (this host). */
        hardwareProfileId: z.string().trim().min(1).max(64).optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      if (input.target.kind === "MODEL") await requireModelChanger(ctx.services.prisma, ctx.user, input.target.name);
      else await requireOperatorChanger(ctx.services.prisma, ctx.user, input.target.name);
      return ctx.services.perfImports.importCsv(ctx.actor, input);
    }),

  /** { status, completedSteps, totalSteps, currentConcurrency, percent, error, queuePosition, waitingFor }: poll it while the run waits or goes. */
  progress: viewerProcedure.input(reportId).query(({ ctx, input }) => ctx.services.perfRuns.progress(input.id)),

  /** Cancels a queued run, or stops a running one (the steps it completed are kept); the report ends CANCELLED. */
  cancel: engineerProcedure.input(reportId).mutation(async ({ ctx, input }) => {
    await requirePerfRunChanger(ctx.services.prisma, ctx.user, input.id);
    return ctx.services.perfRuns.cancel(ctx.actor, input.id, ctx.user.email);
  }),

  /** Reports newest first, without samples. */
  list: viewerProcedure
    .input(
      z
        .object({
          targetName: z.string().trim().min(1).max(128).optional(),
          limit: z.number().int().min(1).max(500).default(100),
        })
        .default({ limit: 100 }),
    )
    .query(({ ctx, input }) => ctx.services.perfRuns.list(input)),

  /** The report and its samples by ascending concurrency (throughput vs latency; Triton's perf table rows in summary.steps). */
  get: viewerProcedure.input(reportId).query(({ ctx, input }) => ctx.services.perfRuns.get(input.id)),

  delete: engineerProcedure.input(reportId).mutation(async ({ ctx, input }) => {
    await requirePerfRunChanger(ctx.services.prisma, ctx.user, input.id);
    await ctx.services.perfRuns.delete(ctx.actor, input.id);
    return { ok: true as const };
  }),

  /** The run measuring and the queued ones, in the order they run, and what holds the measuring slot. */
  queue: viewerProcedure.query(({ ctx }) => ctx.services.perfRuns.queue()),

  /** "The latest report" of a model or operator page: the newest report of any status, with progress while queued or running. */
  latest: viewerProcedure.input(target).query(({ ctx, input }) => ctx.services.perfRuns.latest(input)),

  /** Per version of a model, newest first: its latest report and the comparison with the previous version's ("v3 is 18 % slower at c8 than v2"). */
  versions: viewerProcedure
    .input(z.object({ model: z.string().trim().min(1).max(128) }))
    .query(({ ctx, input }) => ctx.services.perfRuns.versionReports(input.model)),

  /** The plan of automatic runs and whether they are on; everyone signed in may read it. */
  settings: viewerProcedure.query(({ ctx }) => ctx.services.perfRuns.settings.get()),

  /** Admins only: changes the plan (fields left out stay); off cancels the automatic runs still queued. Audited (perf.settings). */
  updateSettings: adminProcedure
    .input(
      z
        .object({
          enabled: z.boolean().optional(),
          maxConcurrency: bounded("maxConcurrency", true),
          measurementIntervalMs: bounded("measurementIntervalMs", true),
          maxTrials: bounded("maxTrials", true),
          timeBoundSecs: bounded("timeBoundSecs", true),
          minGainPercent: bounded("minGainPercent", false),
          headroomMaxRequestsPerSec: bounded("headroomMaxRequestsPerSec", false),
          maxWaitSecs: bounded("maxWaitSecs", true),
        })
        .strict(),
    )
    .mutation(({ ctx, input }) => ctx.services.perfRuns.updateSettings(ctx.actor, input, ctx.user.email)),
});

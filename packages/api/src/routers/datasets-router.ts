import { z } from "zod";
import { adminProcedure, engineerProcedure, router } from "../trpc.js";

/**
 * Datasets for batch jobs (services/batch/datasets.ts). Engineers upload
 * files and see their own datasets; admins see all, and only admins may
 * name a file or a folder of images on the server (under --batch-data-root)
 * or a PostgreSQL table (of a --batch-postgres connection).
 */
const name = z
  .string()
  .trim()
  .min(1, { error: "required" })
  .max(100, { error: "at most 100 characters" })
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { error: "letters, digits, '.', '_' and '-'" });

export const datasetsRouter = router({
  list: engineerProcedure.query(({ ctx }) => ctx.services.datasets.list(ctx.user)),

  /** The dataset with its schema and first rows (the query runs again, on the file as it is now). */
  preview: engineerProcedure
    .input(z.object({ id: z.uuid(), limit: z.number().int().min(0).max(200).default(20) }))
    .query(({ ctx, input }) => ctx.services.datasets.preview(ctx.user, input.id, input.limit)),

  /**
   * For the dataset form (admins only): the names of the --batch-postgres connections, never their URLs,
   * and the folders under --batch-data-root that server paths may name.
   */
  serverSources: adminProcedure.query(({ ctx }) => ctx.services.datasets.serverSources(ctx.user)),

  create: engineerProcedure
    .input(
      z.object({
        name,
        file: z.discriminatedUnion("kind", [
          z.object({
            kind: z.literal("upload"),
            fileName: z.string().min(1).max(200),
            // 5 MiB of base64 (the service checks the decoded size and refuses more with a clear message).
            contentBase64: z.string().max(8 * 1024 * 1024, { error: "the file is too large to upload here" }),
          }),
          z.object({ kind: z.literal("serverPath"), path: z.string().min(1).max(4096) }),
          // A table of a database the server was started with (--batch-postgres NAME=URL): never a URL here.
          z.object({
            kind: z.literal("postgres"),
            connection: z.string().min(1).max(64),
            table: z.string().min(1).max(200),
          }),
        ]),
        query: z.string().max(20_000, { error: "at most 20,000 characters" }).optional(),
        keyColumns: z.array(z.string().min(1).max(200)).max(16).optional(),
      }),
    )
    .mutation(({ ctx, input }) => ctx.services.datasets.create(ctx.actor, ctx.user, input)),

  delete: engineerProcedure.input(z.object({ id: z.uuid() })).mutation(async ({ ctx, input }) => {
    await ctx.services.datasets.remove(ctx.actor, ctx.user, input.id);
    return { ok: true as const };
  }),
});

import { z } from "zod";

/**
 * The environment variables the `operon` CLI reads, read here only and
 * checked with zod; nothing else in the CLI (or the packages it starts)
 * looks at process.env for its configuration.
 */
const environmentSchema = z.object({
  /** The control plane's database when --database-url is not given (postgres(ql)://…, file:<dir>, memory:); empty = unset. */
  DATABASE_URL: z
    .string()
    .optional()
    .transform((value) => (value === "" ? undefined : value)),
  /** The first admin's password when --admin-password is not given. */
  OPERON_ADMIN_PASSWORD: z.string().optional(),
});

export type OperonEnvironment = z.infer<typeof environmentSchema>;

export function operonEnvironment(env: NodeJS.ProcessEnv = process.env): OperonEnvironment {
  return environmentSchema.parse({ DATABASE_URL: env.DATABASE_URL, OPERON_ADMIN_PASSWORD: env.OPERON_ADMIN_PASSWORD });
}

import { z } from "zod";
import { scrubEnvironmentBlock } from "./environment-block-scrub.js";

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
  /** `--database-url` from the environment (serve-flag-environment.ts); wins over DATABASE_URL; empty = unset. */
  OPERON_DATABASE_URL: z
    .string()
    .optional()
    .transform((value) => (value === "" ? undefined : value)),
  /** The first admin's password when --admin-password is not given. */
  OPERON_ADMIN_PASSWORD: z.string().optional(),
});

export type OperonEnvironment = z.infer<typeof environmentSchema>;

/** The environment as the CLI first read it (see takeSecretsFromEnvironment). */
let snapshot: OperonEnvironment | undefined;

export function operonEnvironment(env?: NodeJS.ProcessEnv): OperonEnvironment {
  if (env !== undefined) return parse(env);
  snapshot ??= parse(process.env);
  return snapshot;
}

function parse(env: NodeJS.ProcessEnv): OperonEnvironment {
  return environmentSchema.parse({
    DATABASE_URL: env.DATABASE_URL,
    OPERON_DATABASE_URL: env.OPERON_DATABASE_URL,
    OPERON_ADMIN_PASSWORD: env.OPERON_ADMIN_PASSWORD,
  });
}

/**
 * Reads the secret variables once and removes them from process.env, so no
 * process the CLI starts later (workers, the console) inherits them, and
 * from the process's original environment block (/proc/<pid>/environ,
 * which another process of the same account can read). Returns the names
 * taken, and why the block could not be scrubbed, if it could not.
 */
export function takeSecretsFromEnvironment(): { taken: string[]; blockError?: string } {
  operonEnvironment();
  const taken = SECRET_VARIABLES.filter((name) => process.env[name] !== undefined);
  for (const name of taken) delete process.env[name];
  if (taken.length === 0) return { taken };
  try {
    scrubEnvironmentBlock(taken);
    return { taken };
  } catch (error) {
    return { taken, blockError: (error as Error).message };
  }
}

/** The variables of the schema above that hold secrets. */
export const SECRET_VARIABLES = ["OPERON_ADMIN_PASSWORD", "OPERON_DATABASE_URL", "DATABASE_URL"] as const;

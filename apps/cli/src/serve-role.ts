import { resolve } from "node:path";
import { isPostgresUrl } from "@operon/db/database-url";

/**
 * `operon serve --role`: which parts of Operon this process runs.
 *
 * - all (default): the gateway and, unless --control-plane=false, the control
 *   plane beside it: one host, as before roles existed.
 * - gateway: the gateway only. Its API keys are the control plane's, read
 *   from PostgreSQL and followed (shared-api-keys.ts); model control always
 *   needs an admin key. No console, no API, no schedulers.
 * - control-plane: the control plane (API, console, samplers, schedulers,
 *   uploads into --model-store) with the gateway it uses itself (loading and
 *   checking uploads, perf runs, config search). Like all, but on
 *   PostgreSQL, which the gateways beside it read.
 *
 * Both cluster roles need PostgreSQL: the embedded database belongs to one
 * process, so nothing could be shared through it.
 */
export type ServeRoleName = "all" | "gateway" | "control-plane";

export interface ServeRole {
  name: ServeRoleName;
  /** This process runs the control plane's thread. */
  controlPlane: boolean;
  /** --role gateway: the database its API keys are read from. */
  sharedKeysUrl: string | undefined;
}

export function serveRoleOf(flags: { role: ServeRoleName; controlPlane: boolean }, databaseUrl: string): ServeRole {
  if (flags.role === "all") return { name: "all", controlPlane: flags.controlPlane, sharedKeysUrl: undefined };
  if (!isPostgresUrl(databaseUrl)) {
    throw new Error(
      `--role ${flags.role} needs PostgreSQL (--database-url postgresql://… or $OPERON_DATABASE_URL): the control plane and the gateways share API keys through it; the embedded database serves one process only`,
    );
  }
  if (flags.role === "gateway") return { name: "gateway", controlPlane: false, sharedKeysUrl: databaseUrl };
  if (!flags.controlPlane) {
    throw new Error("--role control-plane runs the control plane: drop --control-plane=false (or use --role gateway)");
  }
  return { name: "control-plane", controlPlane: true, sharedKeysUrl: undefined };
}

/** The repositories a gateway serves: the given ones, then the model store unless it is one of them already. */
export function withModelStore(repositories: readonly string[], modelStoreDir: string | undefined): string[] {
  if (modelStoreDir === undefined) return [...repositories];
  const store = resolve(modelStoreDir);
  return repositories.some((repository) => resolve(repository) === store)
    ? [...repositories]
    : [...repositories, modelStoreDir];
}

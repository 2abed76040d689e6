import { readUserGrants } from "@operon/api/api-key-service";
import { readBatchJobGrants } from "@operon/api/batch-job-key";
import { readControlPlaneGrants } from "@operon/api/control-plane-key";
import type { Database } from "@operon/db";
import type { ApiKeyRing } from "@operon/gateway/auth/api-key-ring";
import type { Logger } from "@operon/gateway/logger";
import type { OperonServer } from "@operon/gateway/server";
import type { SharedPart } from "./shared-state.js";

/**
 * The parts of the control plane's state a `--role gateway` follows
 * (shared-state.ts): its API keys, the shared model store's models, and
 * the registered operators.
 */

/**
 * The user keys' grants (valid, scopes cut to the owner's role), the control plane's internal key
 * (control-plane-key.ts: the usage sampler and model control of the control plane) and the running batch
 * jobs' keys (batch/job-key.ts: a job spreads its rows over every gateway) into the gateway's key ring.
 */
export function apiKeysPart(ring: ApiKeyRing): SharedPart {
  return {
    topic: "api-keys",
    what: "API keys",
    async refresh(db: Database) {
      const [read, controlPlane] = await Promise.all([readUserGrants(db.prisma), readControlPlaneGrants(db.prisma)]);
      const jobs = await readBatchJobGrants(db.prisma, read.sharesOn);
      if (read.everIssued) ring.noteKeysEverIssued();
      ring.replaceAll([...read.grants, ...controlPlane, ...jobs]);
    },
  };
}

/**
 * The model store's models: the control plane writes uploads into the shared directory the gateway
 * serves as a model repository; on a change the gateway loads new models, reloads changed ones and
 * unloads removed ones from it (one pass of the repository poller).
 */
export function modelStorePart(server: () => OperonServer | undefined): SharedPart {
  return {
    topic: "models",
    what: "models",
    async refresh() {
      await server()?.syncRepository();
    },
  };
}

/**
 * The operators registered in the console (the Operator table's latest specs): registered on this
 * gateway when new or changed, removed when deleted. Operators may call operators, so a failed one
 * is retried while a round still registers something; what still fails is logged by name.
 */
export function operatorsPart(server: () => OperonServer | undefined, logger: Logger): SharedPart {
  /** The spec (as stored) each operator was last registered with here. */
  const registered = new Map<string, string>();
  return {
    topic: "operators",
    what: "operators",
    async refresh(db: Database) {
      const engine = server()?.engine;
      if (engine === undefined) return;
      const rows = await db.prisma.operator.findMany({ orderBy: { name: "asc" }, select: { name: true, spec: true } });
      const served = new Set(
        engine
          .listOperators()
          .filter((operator) => operator.source === "api")
          .map((operator) => operator.name),
      );
      let pending = rows.filter(
        (row) => !served.has(row.name) || registered.get(row.name) !== JSON.stringify(row.spec),
      );
      let failures: Array<{ name: string; message: string }> = [];
      while (pending.length > 0) {
        const failed: typeof pending = [];
        failures = [];
        for (const row of pending) {
          try {
            await engine.registerOperator({ ...(row.spec as Record<string, unknown>), name: row.name });
            registered.set(row.name, JSON.stringify(row.spec));
          } catch (error) {
            failed.push(row);
            failures.push({ name: row.name, message: (error as Error).message });
          }
        }
        if (failed.length === pending.length) break;
        pending = failed;
      }
      for (const failure of failures)
        logger.error({ operator: failure.name, err: failure.message }, "cannot serve an operator of the console here");
      const stored = new Set(rows.map((row) => row.name));
      for (const name of served) {
        if (stored.has(name)) continue;
        await engine.unregisterOperator(name);
        registered.delete(name);
        logger.info({ operator: name }, "operator removed in the console: no longer served here");
      }
    },
  };
}

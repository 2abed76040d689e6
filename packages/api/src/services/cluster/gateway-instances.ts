import type { GatewaySession } from "@operon/db";
import type { WorkersResponse } from "@operon/protocol/admin";
import { GatewayClient } from "../gateway/gateway-client.js";
import { readinessUrl } from "./gateway-readiness.js";

/**
 * A cluster gateway's backend instances as the workers page shows them beside
 * its readiness (issue 23: the workers page per gateway host and summed): how
 * many, and their resident memory where the gateway measures it (process
 * instances; thread instances share the gateway's memory). Read from its
 * admin-only workers endpoint with the control plane's internal key, at the
 * address and port of its database session, within the readiness probe's
 * limit so a hung gateway does not hold the page.
 */
export interface InstanceSummary {
  instances: number;
  /** Σ resident memory of the instances with a process of their own; null when none has. */
  rssBytes: number | null;
}

export const GATEWAY_INSTANCES_TIMEOUT_MS = 1000;

export function instanceSummary(response: Pick<WorkersResponse, "workers">): InstanceSummary {
  const measured = response.workers.filter((worker) => worker.rssBytes !== null);
  return {
    instances: response.workers.length,
    rssBytes: measured.length === 0 ? null : measured.reduce((sum, worker) => sum + worker.rssBytes!, 0),
  };
}

/** One gateway's instances, or null when it cannot be asked (no address, no answer, the key refused). */
export async function readGatewayInstances(
  gateway: Pick<GatewaySession, "address" | "httpPort">,
  adminKey: string | undefined,
  timeoutMs: number = GATEWAY_INSTANCES_TIMEOUT_MS,
): Promise<InstanceSummary | null> {
  const url = readinessUrl(gateway);
  if (url === undefined) return null;
  const client = new GatewayClient({ httpUrl: new URL(url).origin, adminKey, timeoutMs });
  try {
    return instanceSummary(await client.workers());
  } catch {
    return null;
  }
}

/** The instances of the control plane's own gateway and the others', summed (the others unknown count as none). */
export function summedInstances(summaries: ReadonlyArray<InstanceSummary | null>): InstanceSummary {
  let rss: number | null = null;
  let instances = 0;
  for (const summary of summaries) {
    if (summary === null) continue;
    instances += summary.instances;
    if (summary.rssBytes !== null) rss = (rss ?? 0) + summary.rssBytes;
  }
  return { instances, rssBytes: rss };
}

import { connectedGateways, type GatewaySession, type PrismaClient } from "@operon/db";
import type { Logger } from "@operon/protocol/logger";
import { GatewayClient } from "../gateway/gateway-client.js";

/**
 * The cluster's other gateways (`operon serve --role gateway` on this
 * database) as clients the control plane can read: the usage sampler reads
 * each one's statistics, workers and metrics.
 *
 * A gateway is reached at the address the database sees its connection come
 * from and the ports it registered (gatewaySessionName), with the control
 * plane's internal key (control-plane-key.ts: every gateway accepts it). Its
 * identity in the usage rows is `<host>:<http port>` as it registered: two
 * gateways on one host differ by port, and a gateway restarted on the same
 * host and port continues its series. The control plane's own gateway is not
 * in this list (it registers no session): its rows keep gatewayHost null.
 */
export interface ClusterGateway {
  /** `<host>:<http port>`; null for the control plane's own gateway. */
  gatewayHost: string | null;
  client: GatewayClient;
}

/** Seconds a sampler waits on one gateway: a hung gateway must not hold the others' samples. */
export const CLUSTER_GATEWAY_TIMEOUT_MS = 5_000;

export function gatewayHostOf(session: Pick<GatewaySession, "host" | "httpPort">): string {
  return `${session.host}:${session.httpPort}`;
}

/** The connected gateways with an address (one connected over a Unix socket cannot be asked: it is left out). */
export async function clusterGateways(prisma: PrismaClient, adminKey: string | undefined): Promise<ClusterGateway[]> {
  const sessions = await connectedGateways(prisma);
  const gateways: ClusterGateway[] = [];
  const seen = new Set<string>();
  for (const session of sessions) {
    if (session.address === null || session.httpPort <= 0) continue;
    const gatewayHost = gatewayHostOf(session);
    // A gateway reconnecting shows twice for a moment (old and new session): read it once.
    if (seen.has(gatewayHost)) continue;
    seen.add(gatewayHost);
    const host = session.address.includes(":") ? `[${session.address}]` : session.address;
    gateways.push({
      gatewayHost,
      client: new GatewayClient({
        httpUrl: `http://${host}:${session.httpPort}`,
        metricsUrl: session.metricsPort !== null ? `http://${host}:${session.metricsPort}/metrics` : undefined,
        adminKey,
        timeoutMs: CLUSTER_GATEWAY_TIMEOUT_MS,
      }),
    });
  }
  return gateways;
}

/**
 * What a sampler reads: the control plane's own gateway (gatewayHost null)
 * and the cluster's others. When the others cannot be listed, the own one
 * alone, said in a warning that names `what` is sampled.
 */
export async function gatewaysToSample(
  own: GatewayClient,
  listOthers: () => Promise<ClusterGateway[]>,
  logger: Logger,
  what: string,
): Promise<ClusterGateway[]> {
  let others: ClusterGateway[] = [];
  try {
    others = await listOthers();
  } catch (error) {
    logger.warn(
      { err: error },
      `${what} of the control plane's gateway only: the cluster's gateways could not be listed`,
    );
  }
  return [{ gatewayHost: null, client: own }, ...others];
}

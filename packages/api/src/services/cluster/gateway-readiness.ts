import type { GatewaySession } from "@operon/db";

/**
 * What a gateway of the cluster answers on its readiness endpoint
 * (GET /v2/health/ready, the one Kubernetes' readiness probe asks), as the
 * control plane sees it from where it runs:
 *
 * - ready / not-ready: the gateway's answer (200 / anything else); `detail` is
 *   its Operon-Readiness-Detail header, e.g. "shared state stale since …: not
 *   connected for change notifications" while it lost the database;
 * - unreachable: no answer within the time limit, or no address to ask (a
 *   gateway connected to the database over a Unix socket); `detail` says which.
 *
 * The address is the one the database sees the gateway's connection come
 * from and the port the one it registered (gatewaySessionName), so a gateway
 * behind NAT, or serving HTTPS only, shows as unreachable though it may serve.
 */
export type GatewayReadiness =
  | { state: "ready" | "not-ready"; detail: string | null }
  | { state: "unreachable"; detail: string };

export const READINESS_PROBE_TIMEOUT_MS = 1000;

/** The URL of a gateway's readiness endpoint, or undefined when it has no address (a Unix socket). */
export function readinessUrl(gateway: Pick<GatewaySession, "address" | "httpPort">): string | undefined {
  if (gateway.address === null) return undefined;
  const host = gateway.address.includes(":") ? `[${gateway.address}]` : gateway.address;
  return `http://${host}:${gateway.httpPort}/v2/health/ready`;
}

/** Asks one gateway whether it is ready; never throws (a failure is the "unreachable" answer). */
export async function probeGatewayReadiness(
  gateway: Pick<GatewaySession, "address" | "httpPort">,
  timeoutMs: number = READINESS_PROBE_TIMEOUT_MS,
): Promise<GatewayReadiness> {
  const url = readinessUrl(gateway);
  if (url === undefined)
    return { state: "unreachable", detail: "connected to the database over a Unix socket: no address to ask" };
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
    await response.body?.cancel();
    return {
      state: response.status === 200 ? "ready" : "not-ready",
      detail: response.headers.get("operon-readiness-detail"),
    };
  } catch (error) {
    const reason =
      (error as Error).name === "TimeoutError"
        ? `no answer within ${timeoutMs} ms`
        : ((error as Error & { cause?: Error }).cause?.message ?? (error as Error).message);
    return { state: "unreachable", detail: `${url}: ${reason}` };
  }
}

import { connectedGateways } from "@operon/db";
import { probeGatewayReadiness } from "../services/cluster/gateway-readiness.js";
import { instanceSummary, readGatewayInstances, summedInstances } from "../services/cluster/gateway-instances.js";
import { router, viewerProcedure } from "../trpc.js";

/**
 * The gateway's backend instances (threads of the gateway or worker
 * processes, see WorkerInstanceInfo.isolation), the gateway process itself and the host's cores, as the gateway reports them now
 * (GET /v2/operon/workers). CPU is cumulative seconds: the console turns two
 * readings into a utilization.
 *
 * `gateways`: the other gateways on this database (`operon serve --role
 * gateway`), as its session list shows them now: one that stops (or dies)
 * leaves the list as its connection closes. Each with its readiness as it
 * answers the control plane now (gateway-readiness.ts: asked at once, at most
 * a second each, so the list costs a second at worst; the gateways are the
 * database's sessions, so their number is bounded by its max_connections),
 * and its backend instances (gateway-instances.ts: count and memory, null
 * when it could not be asked). `summed`: the instances of this control
 * plane's gateway and every other one together.
 */
export const workersRouter = router({
  list: viewerProcedure.query(async ({ ctx }) => {
    const response = await ctx.services.gateway.workers();
    const adminKey = ctx.services.options.gateway.adminKey;
    const gateways = await Promise.all(
      (await connectedGateways(ctx.services.prisma)).map(async (gateway) => {
        const [readiness, instances] = await Promise.all([
          probeGatewayReadiness(gateway),
          readGatewayInstances(gateway, adminKey),
        ]);
        return { ...gateway, readiness, instances };
      }),
    );
    return {
      hostCpuCores: response.hostCpuCores,
      gateway: response.gateway,
      workers: response.workers.map((worker) => ({
        isolation: worker.isolation,
        pid: worker.pid,
        model: worker.model,
        version: worker.version,
        instance: worker.instance,
        backend: worker.backend,
        kind: worker.kind,
        device: worker.device,
        state: worker.state,
        restarts: worker.restarts,
        inFlight: worker.inFlight,
        startedAt: worker.startedAt,
        cpuSeconds: worker.cpuSeconds,
        rssBytes: worker.rssBytes,
      })),
      /** --backend-isolation of the gateway; null from a gateway that does not say. */
      defaultIsolation: response.defaultIsolation ?? null,
      gateways,
      summed: summedInstances([instanceSummary(response), ...gateways.map((gateway) => gateway.instances)]),
      readAt: new Date(),
    };
  }),
});

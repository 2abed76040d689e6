import type { Logger } from "@operon/protocol/logger";
import { GatewayOutageLog } from "../usage/lasting-failure-log.js";
import type { PrismaClient } from "@operon/db";
import { type ClusterGateway, gatewaysToSample } from "../cluster/cluster-gateways.js";
import type { GatewayClient } from "../gateway/gateway-client.js";
import { parsePrometheusText } from "../usage/prometheus-text.js";
import { PeriodicTask } from "@operon/protocol/periodic-task";

/**
 * Samples each tenant's served units into TenantUsageSample rows, from the
 * gateway's cumulative operon_tenant_units_total / _requests_total /
 * _throttled_total and operon_tenant_share (admission/tenant-metrics.ts),
 * every interval like the usage sampler, storing the difference to the
 * previous read. The first read sets the baseline; a counter that went
 * down (the gateway restarted) counts from 0. Samples older than the
 * retention are deleted at most once an hour.
 *
 * On a cluster (issue 23) every gateway is read in each sample, as the usage
 * sampler does: the control plane's own (rows with gatewayHost null) and each
 * `--role gateway` on the database (`clusterGateways`, rows with gatewayHost
 * `<host>:<http port>`, its metrics port as it registered, with the internal
 * key). Each gateway has its own previous reading, so a tenant's counters on
 * two gateways are two series, never one counter that jumps between them;
 * the rows of one sample share the interval's start and the reader
 * (TenantGroups.usage) sums units, requests and throttled per bucket. Each
 * gateway enforces a tenant's share on its own traffic; the share itself is
 * the database's, the same on every row. A gateway that does not answer (or
 * serves no metrics) is logged by name and skipped, the others sampled; one
 * that left the list loses its reading (back later, it starts with a baseline).
 */
interface TenantCounters {
  units: number;
  requests: number;
  throttled: number;
  share: number;
}

interface Reading {
  takenAt: number;
  tenants: Map<string, TenantCounters>;
}

export interface TenantSampleResult {
  written: number;
  /** True when no gateway had a previous reading (every one read only set its baseline). */
  baseline: boolean;
  /** Why nothing was sampled (every gateway skipped), when so. */
  skipped: string | null;
  /** Each gateway read: its rows, whether it only set its baseline, why it was skipped. */
  gateways: Array<{ gatewayHost: string | null; written: number; baseline: boolean; skipped: string | null }>;
}

const UPKEEP_EVERY_MS = 3_600_000;
/** The key of the control plane's own gateway's reading (a gatewayHost is never empty). */
const OWN_GATEWAY = "";

export class TenantUsageSampler {
  /** Each gateway's previous reading, by gatewayHost (OWN_GATEWAY for the control plane's own). */
  private readonly previous = new Map<string, Reading>();
  private readonly timer: PeriodicTask;
  private running: Promise<unknown> = Promise.resolve();
  private lastUpkeepAt = Number.NEGATIVE_INFINITY;
  private stopped = false;

  /** Gateways whose metrics cannot be read, said once and not on every sample. */
  private readonly outages: GatewayOutageLog;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly gateway: GatewayClient,
    private readonly schedule: { intervalSecs: number; retentionDays: number },
    private readonly logger: Logger,
    /** The cluster's other gateways (`--role gateway` on this database); none on one host. */
    private readonly clusterGateways: () => Promise<ClusterGateway[]> = async () => [],
  ) {
    this.outages = new GatewayOutageLog(logger);
    this.timer = new PeriodicTask(() => this.sampleNow(), {
      intervalMs: schedule.intervalSecs * 1000,
      runAtStart: true,
      onError: (error) => this.logger.error({ err: error }, "tenant usage sample failed"),
    });
  }

  /** A sample every interval (the first sets the baseline); a no-op when the interval is 0. */
  start(): void {
    if (!this.stopped) this.timer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.timer.stop();
    await this.running.catch(() => undefined);
  }

  /** One sample now; samples never overlap. */
  sampleNow(): Promise<TenantSampleResult> {
    const next = this.running.catch(() => undefined).then(() => this.sample());
    this.running = next;
    return next;
  }

  private async sample(): Promise<TenantSampleResult> {
    const takenAt = Date.now();
    const gateways = await gatewaysToSample(
      this.gateway,
      () => this.clusterGateways(),
      this.logger,
      "tenant usage sample",
    );
    // All at the same moment: their rows share the interval's start, so the reader sums them per bucket.
    const readings = await Promise.all(gateways.map((gateway) => this.read(gateway)));
    const rows: Array<ReturnType<typeof intervalRows>[number] & { gatewayHost: string | null }> = [];
    const results: TenantSampleResult["gateways"] = [];
    const next = new Map<string, Reading>();
    gateways.forEach((gateway, index) => {
      const reading = readings[index]!;
      const key = gateway.gatewayHost ?? OWN_GATEWAY;
      const previous = this.previous.get(key);
      if (typeof reading === "string") {
        // Skipped: its previous reading stays, so its next sample covers the longer interval.
        if (previous !== undefined) next.set(key, previous);
        results.push({ gatewayHost: gateway.gatewayHost, written: 0, baseline: false, skipped: reading });
        return;
      }
      const current = { takenAt, tenants: reading };
      next.set(key, current);
      if (previous === undefined) {
        results.push({ gatewayHost: gateway.gatewayHost, written: 0, baseline: true, skipped: null });
        return;
      }
      const own = intervalRows(previous, current).map((row) => ({ ...row, gatewayHost: gateway.gatewayHost }));
      rows.push(...own);
      results.push({ gatewayHost: gateway.gatewayHost, written: own.length, baseline: false, skipped: null });
    });
    // Gateways that left the list are forgotten: a gateway back later starts with a baseline.
    this.previous.clear();
    for (const [key, reading] of next) this.previous.set(key, reading);
    if (rows.length > 0) await this.prisma.tenantUsageSample.createMany({ data: rows });
    if (this.schedule.retentionDays > 0 && takenAt - this.lastUpkeepAt >= UPKEEP_EVERY_MS) {
      this.lastUpkeepAt = takenAt;
      await this.prisma.tenantUsageSample.deleteMany({
        where: { at: { lt: new Date(takenAt - this.schedule.retentionDays * 86_400_000) } },
      });
    }
    const allSkipped = results.every((result) => result.skipped !== null);
    return {
      written: rows.length,
      baseline:
        results.every((result) => result.baseline || result.skipped !== null) && results.some((r) => r.baseline),
      skipped: allSkipped ? results.map((result) => result.skipped).join("; ") : null,
      gateways: results,
    };
  }

  /** One gateway's tenant counters now, or why they could not be read (logged here, naming the gateway). */
  private async read(gateway: ClusterGateway): Promise<Map<string, TenantCounters> | string> {
    const label = gateway.gatewayHost ?? "the control plane's gateway";
    let text: string | undefined;
    const source = `metrics of ${label}`;
    try {
      text = await gateway.client.metricsText();
      this.outages.succeeded(source);
    } catch (error) {
      // Said when it starts, then seldom, and when it is over: not on every sample (lasting-failure-log.ts).
      this.outages.failed(source, `tenant usage sample skipped for ${label}: its metrics could not be read`, error);
      return (error as Error).message;
    }
    if (text === undefined) return `${label}: its metrics are off`;
    const current = new Map<string, TenantCounters>();
    const entry = (tenant: string): TenantCounters => {
      let counters = current.get(tenant);
      if (counters === undefined) {
        counters = { units: 0, requests: 0, throttled: 0, share: 1 };
        current.set(tenant, counters);
      }
      return counters;
    };
    for (const sample of parsePrometheusText(text)) {
      const tenant = sample.labels["tenant"];
      if (tenant === undefined) continue;
      if (sample.name === "operon_tenant_units_total") entry(tenant).units = sample.value;
      else if (sample.name === "operon_tenant_requests_total") entry(tenant).requests = sample.value;
      else if (sample.name === "operon_tenant_throttled_total") entry(tenant).throttled = sample.value;
      else if (sample.name === "operon_tenant_share") entry(tenant).share = sample.value;
    }
    return current;
  }
}

/** One gateway's rows for the interval between two of its readings: tenants with anything to count. */
function intervalRows(previous: Reading, current: Reading) {
  const delta = (now: number, before: number | undefined): number =>
    before === undefined || now < before ? now : now - before;
  const rows = [];
  for (const [tenant, now] of current.tenants) {
    const before = previous.tenants.get(tenant);
    const units = delta(now.units, before?.units);
    const requests = delta(now.requests, before?.requests);
    const throttled = delta(now.throttled, before?.throttled);
    if (units === 0 && requests === 0 && throttled === 0) continue;
    rows.push({
      tenant,
      at: new Date(previous.takenAt),
      intervalSeconds: Math.max(1, Math.round((current.takenAt - previous.takenAt) / 1000)),
      units,
      requests: Math.round(requests),
      throttled: Math.round(throttled),
      share: now.share,
    });
  }
  return rows;
}

import type { Logger } from "@operon/protocol/logger";
import type { PrismaClient } from "@operon/db";
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
 * retention are deleted at most once an hour. A gateway that does not
 * answer is logged and the sample skipped.
 */
interface TenantCounters {
  units: number;
  requests: number;
  throttled: number;
  share: number;
}

export interface TenantSampleResult {
  written: number;
  baseline: boolean;
  skipped: string | null;
}

const UPKEEP_EVERY_MS = 3_600_000;

export class TenantUsageSampler {
  private previous: { takenAt: number; tenants: Map<string, TenantCounters> } | undefined;
  private readonly timer: PeriodicTask;
  private running: Promise<unknown> = Promise.resolve();
  private lastUpkeepAt = Number.NEGATIVE_INFINITY;
  private stopped = false;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly gateway: GatewayClient,
    private readonly schedule: { intervalSecs: number; retentionDays: number },
    private readonly logger: Logger,
  ) {
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
    let text: string | undefined;
    try {
      text = await this.gateway.metricsText();
    } catch (error) {
      this.logger.warn({ err: error }, "tenant usage sample skipped: the gateway's metrics could not be read");
      return { written: 0, baseline: false, skipped: (error as Error).message };
    }
    if (text === undefined) return { written: 0, baseline: false, skipped: "the gateway's metrics are off" };
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
    const previous = this.previous;
    this.previous = { takenAt, tenants: current };
    if (previous === undefined) return { written: 0, baseline: true, skipped: null };
    const delta = (now: number, before: number | undefined): number =>
      before === undefined || now < before ? now : now - before;
    const rows = [];
    for (const [tenant, now] of current) {
      const before = previous.tenants.get(tenant);
      const units = delta(now.units, before?.units);
      const requests = delta(now.requests, before?.requests);
      const throttled = delta(now.throttled, before?.throttled);
      if (units === 0 && requests === 0 && throttled === 0) continue;
      rows.push({
        tenant,
        at: new Date(previous.takenAt),
        intervalSeconds: Math.max(1, Math.round((takenAt - previous.takenAt) / 1000)),
        units,
        requests: Math.round(requests),
        throttled: Math.round(throttled),
        share: now.share,
      });
    }
    if (rows.length > 0) await this.prisma.tenantUsageSample.createMany({ data: rows });
    if (this.schedule.retentionDays > 0 && takenAt - this.lastUpkeepAt >= UPKEEP_EVERY_MS) {
      this.lastUpkeepAt = takenAt;
      await this.prisma.tenantUsageSample.deleteMany({
        where: { at: { lt: new Date(takenAt - this.schedule.retentionDays * 86_400_000) } },
      });
    }
    return { written: rows.length, baseline: false, skipped: null };
  }
}

import { Counter, Gauge, type Registry } from "prom-client";
import type { TenantShares } from "./tenant-shares.js";

/**
 * The tenant shares' Prometheus series, filled at scrape time from the
 * gate's plain counters (TenantShares.drainUsage), never per request:
 *
 * - operon_tenant_units_total{tenant}: normalized units served (batch
 *   items × the model's compute milliseconds per inference)
 * - operon_tenant_requests_total{tenant}: requests served
 * - operon_tenant_throttled_total{tenant}: requests refused as over share
 * - operon_tenant_share{tenant}: the configured share (weight)
 *
 * `tenant` is the tenant id of the key grants (a TenantGroup id, `user:<id>`
 * for a key's owner, `anonymous` for requests without a key). No series
 * exist while no tenant shares are configured.
 */
export function registerTenantMetrics(registry: Registry, shares: TenantShares): void {
  const flush = (): void => {
    for (const usage of shares.drainUsage()) {
      const labels = { tenant: usage.tenant };
      if (usage.units > 0) units.inc(labels, usage.units);
      if (usage.requests > 0) requests.inc(labels, usage.requests);
      if (usage.refused > 0) throttled.inc(labels, usage.refused);
    }
  };
  const units = new Counter({
    name: "operon_tenant_units_total",
    help: "Normalized units served per tenant (batch items x the model's measured compute milliseconds per inference)",
    labelNames: ["tenant"] as const,
    registers: [registry],
    collect: flush,
  });
  const requests = new Counter({
    name: "operon_tenant_requests_total",
    help: "Inference requests served per tenant while tenant shares are configured",
    labelNames: ["tenant"] as const,
    registers: [registry],
    collect: flush,
  });
  const throttled = new Counter({
    name: "operon_tenant_throttled_total",
    help: "Requests refused (429 / RESOURCE_EXHAUSTED) as over their tenant's share while the model was busy",
    labelNames: ["tenant"] as const,
    registers: [registry],
    collect: flush,
  });
  const share = new Gauge({
    name: "operon_tenant_share",
    help: "The share (weight) of capacity configured for each tenant",
    labelNames: ["tenant"] as const,
    registers: [registry],
    collect: () => {
      share.reset();
      for (const tenant of shares.shares()) share.set({ tenant: tenant.id }, tenant.share);
    },
  });
}

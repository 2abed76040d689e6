import type { Logger } from "@operon/protocol/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { TenantUsageSampler } from "../services/tenants/tenant-usage-sampler.js";
import type { GatewayClient } from "../services/gateway/gateway-client.js";

const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;

describe.each(testDatabaseBackends({ migrated: true }))("tenants router on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(db);
  });
  afterAll(async () => {
    await h?.close();
    await db?.close();
    await backend.teardown();
  });

  it("lets only admins read and change tenants", async () => {
    for (const role of ["ENGINEER", "VIEWER"] as const) {
      expect(await appCodeOf(h.as(role).tenants.list())).toBe("FORBIDDEN");
      expect(await appCodeOf(h.as(role).tenants.create({ name: "x", share: 1 }))).toBe("FORBIDDEN");
    }
    expect(await appCodeOf(h.as(null).tenants.list())).toBe("UNAUTHENTICATED");
  });

  it("puts the tenant on every grant once a group exists, and takes it off when none is left", async () => {
    const admin = h.as("ADMIN");
    const { summary: plain } = await h.as("ENGINEER").apiKeys.create({ name: "plain", scopes: ["infer"] });
    const { summary: grouped } = await admin.apiKeys.create({ name: "grouped", scopes: ["infer"] });
    expect(h.controlPlane.services.apiKeys.currentGrants().every((grant) => grant.tenant === undefined)).toBe(true);

    const gold = await admin.tenants.create({ name: "gold", share: 2, policy: "REFUSE" });
    expect(gold).toMatchObject({ kind: "group", name: "gold", share: 2, policy: "REFUSE", keys: [] });
    await admin.tenants.assignKey({ keyId: grouped.id, tenantId: gold.id });
    const grants = new Map(h.controlPlane.services.apiKeys.currentGrants().map((grant) => [grant.id, grant]));
    expect(grants.get(grouped.id)!.tenant).toEqual({ id: gold.id, share: 2, policy: "refuse" });
    expect(grants.get(plain.id)!.tenant).toEqual({ id: `user:${h.users.ENGINEER.id}`, share: 1, policy: "queue" });

    const tenants = await admin.tenants.list();
    expect(tenants.map((tenant) => [tenant.kind, tenant.name, tenant.keys.map((key) => key.name)])).toEqual([
      ["group", "gold", ["grouped"]],
      ["owner", "engineer@example.com", ["plain"]],
      ["anonymous", "anonymous (no key)", []],
    ]);

    await admin.tenants.update({ id: gold.id, share: 3, policy: "QUEUE" });
    expect(h.controlPlane.services.apiKeys.currentGrants().find((grant) => grant.id === grouped.id)!.tenant).toEqual({
      id: gold.id,
      share: 3,
      policy: "queue",
    });

    await admin.tenants.delete({ id: gold.id });
    expect(h.controlPlane.services.apiKeys.currentGrants().every((grant) => grant.tenant === undefined)).toBe(true);
    expect((await admin.apiKeys.list({ all: true })).find((key) => key.id === grouped.id)!.tenantGroupId).toBeNull();

    const { events } = await admin.audit.list({ action: "tenant.", limit: 20 });
    expect(events.map((event) => event.action).reverse()).toEqual([
      "tenant.create",
      "tenant.assignKey",
      "tenant.update",
      "tenant.delete",
    ]);
  });

  it("rejects bad input with the problem named and stores nothing", async () => {
    const admin = h.as("ADMIN");
    await expect(admin.tenants.create({ name: "zero", share: 0 })).rejects.toThrow(/at least 0.001/);
    await expect(admin.tenants.create({ name: "tiny", share: 1e-300 })).rejects.toThrow(/at least 0.001/);
    await expect(admin.tenants.create({ name: "huge", share: 1001 })).rejects.toThrow(/at most 1000/);
    await expect(admin.tenants.create({ name: "inf", share: Number.POSITIVE_INFINITY })).rejects.toThrow(/share/);
    await expect(admin.tenants.create({ name: "nan", share: Number.NaN })).rejects.toThrow(/share/);
    await expect(admin.tenants.create({ name: " ", share: 1 })).rejects.toThrow(/required/);
    await expect(admin.tenants.create({ name: "p", share: 1, policy: "DROP" as never })).rejects.toThrow(
      /QUEUE .* or REFUSE/,
    );
    expect(await db.prisma.tenantGroup.count()).toBe(0);
    const one = await admin.tenants.create({ name: "same", share: 1 });
    expect(await appCodeOf(admin.tenants.create({ name: "same", share: 2 }))).toBe("CONFLICT");
    expect(await appCodeOf(admin.tenants.update({ id: "00000000-0000-4000-8000-000000000000", share: 2 }))).toBe(
      "NOT_FOUND",
    );
    expect(
      await appCodeOf(admin.tenants.assignKey({ keyId: "00000000-0000-4000-8000-000000000000", tenantId: one.id })),
    ).toBe("NOT_FOUND");
    const { summary } = await admin.apiKeys.create({ name: "k", scopes: ["infer"] });
    expect(
      await appCodeOf(admin.tenants.assignKey({ keyId: summary.id, tenantId: "00000000-0000-4000-8000-000000000000" })),
    ).toBe("VALIDATION_FAILED");
    expect(await appCodeOf(admin.tenants.usage({ from: new Date(2000), to: new Date(1000) }))).toBe(
      "VALIDATION_FAILED",
    );
    await admin.tenants.delete({ id: one.id });
  });

  it("samples the gateway's tenant counters and shows each tenant's use against its share", async () => {
    let text = "";
    const gateway = { metricsText: async () => text } as unknown as GatewayClient;
    const sampler = new TenantUsageSampler(db.prisma, gateway, { intervalSecs: 0, retentionDays: 30 }, silent);
    const metrics = (gold: number, bronze: number, throttled: number) =>
      [
        "# TYPE operon_tenant_units_total counter",
        `operon_tenant_units_total{tenant="gold"} ${gold}`,
        `operon_tenant_units_total{tenant="bronze"} ${bronze}`,
        `operon_tenant_requests_total{tenant="gold"} ${gold / 2}`,
        `operon_tenant_requests_total{tenant="bronze"} ${bronze / 2}`,
        `operon_tenant_throttled_total{tenant="bronze"} ${throttled}`,
        `operon_tenant_share{tenant="gold"} 2`,
        `operon_tenant_share{tenant="bronze"} 1`,
      ].join("\n");
    const start = Date.now();
    text = metrics(100, 50, 0);
    expect(await sampler.sampleNow()).toMatchObject({ written: 0, baseline: true, skipped: null });
    text = metrics(300, 150, 7);
    expect(await sampler.sampleNow()).toMatchObject({ written: 2, baseline: false, skipped: null });
    text = metrics(300, 150, 7);
    expect(await sampler.sampleNow()).toMatchObject({ written: 0 });
    const usage = await h
      .as("ADMIN")
      .tenants.usage({ from: new Date(start - 60_000), to: new Date(Date.now() + 60_000) });
    expect(usage.shareOf).toEqual({ gold: 2 / 3, bronze: 1 / 3 });
    expect(usage.points).toHaveLength(1);
    expect(usage.points[0]!.tenants["gold"]).toEqual({ units: 200, requests: 100, throttled: 0, use: 2 / 3 });
    expect(usage.points[0]!.tenants["bronze"]).toEqual({ units: 100, requests: 50, throttled: 7, use: 1 / 3 });
    await sampler.stop();
  });

  it("samples every gateway of the cluster apart and sums them: 5 + 7 requests give 12", async () => {
    const counters = (requests: number) =>
      `operon_tenant_units_total{tenant="team"} ${requests * 2}\noperon_tenant_requests_total{tenant="team"} ${requests}\noperon_tenant_share{tenant="team"} 1`;
    const texts = new Map<string, string | Error>([
      ["own", counters(0)],
      ["a", counters(10)],
      ["b", counters(100)],
    ]);
    const client = (name: string) =>
      ({
        metricsText: async () => {
          const text = texts.get(name)!;
          if (text instanceof Error) throw text;
          return text;
        },
      }) as unknown as GatewayClient;
    const lines: Array<[level: string, message: string]> = [];
    const recording: Logger = {
      info: (_fields, message) => void lines.push(["info", message ?? ""]),
      warn: (_fields, message) => void lines.push(["warn", message ?? ""]),
      error: (_fields, message) => void lines.push(["error", message ?? ""]),
    };
    const sampler = new TenantUsageSampler(
      db.prisma,
      client("own"),
      { intervalSecs: 0, retentionDays: 30 },
      recording,
      async () => [
        { gatewayHost: "a:8000", client: client("a") },
        { gatewayHost: "b:8000", client: client("b") },
      ],
    );
    const start = Date.now();
    expect(await sampler.sampleNow()).toMatchObject({ written: 0, baseline: true });
    texts.set("a", counters(15)); // 5 more on one gateway
    texts.set("b", counters(107)); // 7 more on the other
    const second = await sampler.sampleNow();
    expect(second.gateways).toEqual([
      { gatewayHost: null, written: 0, baseline: false, skipped: null },
      { gatewayHost: "a:8000", written: 1, baseline: false, skipped: null },
      { gatewayHost: "b:8000", written: 1, baseline: false, skipped: null },
    ]);
    const rows = await db.prisma.tenantUsageSample.findMany({
      where: { tenant: "team" },
      orderBy: { gatewayHost: "asc" },
    });
    expect(rows.map((row) => [row.gatewayHost, row.requests, row.units])).toEqual([
      ["a:8000", 5, 10],
      ["b:8000", 7, 14],
    ]);
    const usage = await h
      .as("ADMIN")
      .tenants.usage({ from: new Date(start - 60_000), to: new Date(Date.now() + 60_000) });
    const team = usage.points.map((point) => point.tenants["team"]?.requests ?? 0).reduce((a, b) => a + b, 0);
    expect(team).toBe(12);
    // One gateway down: it is skipped by name and keeps its reading; the other is sampled.
    texts.set("a", new Error("connect ECONNREFUSED"));
    texts.set("b", counters(110));
    const third = await sampler.sampleNow();
    expect(third.gateways[1]).toEqual({
      gatewayHost: "a:8000",
      written: 0,
      baseline: false,
      skipped: "connect ECONNREFUSED",
    });
    expect(third.gateways[2]).toMatchObject({ gatewayHost: "b:8000", written: 1 });
    await sampler.sampleNow(); // still down: not said again
    texts.set("a", counters(16)); // back: counted from its last reading (15), not a new baseline
    expect((await sampler.sampleNow()).gateways[1]).toMatchObject({ written: 1, baseline: false });
    expect(lines).toEqual([
      ["warn", "tenant usage sample skipped for a:8000: its metrics could not be read"],
      ["info", "the gateway can be read again (metrics of a:8000)"],
    ]);
    await sampler.stop();
  });
});

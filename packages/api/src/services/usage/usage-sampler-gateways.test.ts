import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, type Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import type { Logger } from "@operon/protocol/logger";
import { GatewayClient } from "../gateway/gateway-client.js";
import { startTestGateway, type TestGateway } from "../../testing/gateway-harness.js";
import type { ClusterGateway } from "../cluster/cluster-gateways.js";
import { UsageSampler } from "./usage-sampler.js";
import { usageCosts, usageTimeSeries, lastSampleOf } from "./usage-metrics.js";
import { compactUsageSamples } from "./usage-compaction.js";

/**
 * The usage sampler over a cluster's gateways (issue 23): two real gateways, one as the control plane's own
 * and one as a cluster gateway; rows per gateway, the charts and costs summed over them, one gateway down.
 */
const EXAMPLES = fileURLToPath(new URL("../../../../../examples/model_repository", import.meta.url));

let own: TestGateway;
let other: TestGateway;

beforeAll(async () => {
  [own, other] = await Promise.all(
    [0, 1].map(() =>
      startTestGateway({ modelRepositories: [EXAMPLES], loadModels: ["add_sub"], backendIsolation: "process" }),
    ),
  );
});
afterAll(async () => {
  await own?.stop();
  await other?.stop();
});

async function traffic(gateway: TestGateway, count: number): Promise<void> {
  const client = new GatewayClient({ httpUrl: gateway.httpUrl });
  const data = Array.from({ length: 16 }, (_, i) => i);
  for (let i = 0; i < count; i += 1) {
    await client.infer("add_sub", undefined, {
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [1, 16], data },
        { name: "INPUT1", datatype: "FP32", shape: [1, 16], data },
      ],
    });
  }
}

function capturingLogger(): Logger & { warnings: string[]; infos: string[] } {
  const warnings: string[] = [];
  const infos: string[] = [];
  return {
    warnings,
    infos,
    info: (_obj, msg) => void infos.push(msg ?? ""),
    warn: (_obj, msg) => void warnings.push(msg ?? ""),
    error: (_obj, msg) => void warnings.push(msg ?? ""),
  };
}

describe("lastSampleOf", () => {
  it("sums the gateways' rows of the latest start, not older ones", () => {
    const at = new Date("2026-12-05T10:00:15Z");
    const older = new Date("2026-12-05T10:00:00Z");
    const last = lastSampleOf([
      { at, intervalSeconds: 15, requests: 30, errors: 1, cpuUtilization: 0.2 },
      { at, intervalSeconds: 16, requests: 10, errors: 0, cpuUtilization: null },
      { at, intervalSeconds: 15, requests: 5, errors: 2, cpuUtilization: 0.1 },
      { at: older, intervalSeconds: 15, requests: 999, errors: 9, cpuUtilization: 0.9 },
    ]);
    expect(last).toEqual({ at, intervalSeconds: 16, requests: 45, errors: 3, cpuUtilization: expect.closeTo(0.3, 9) });
    expect(lastSampleOf([])).toBeUndefined();
  });
});

// Copies of the run's migrated template database: migrating them, as the set-up below does, finds nothing to apply.
const backends = testDatabaseBackends({ migrated: true });
describe.each(backends)("usage sampler over a cluster's gateways on $name", (backend) => {
  let db: Database;

  beforeAll(async () => {
    db = await backend.setup();
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
    await backend.teardown();
  });

  it("writes rows per gateway, sums them in the series and costs, and keeps sampling when one gateway is down", async () => {
    await db.prisma.hardwareProfile.create({
      data: { name: "node", kind: "CPU", cpuCores: 2, costPerHour: 3.6, currency: "USD", isDefault: true },
    });
    const logger = capturingLogger();
    let listed: ClusterGateway[] = [
      {
        gatewayHost: "gateway-b:8000",
        client: new GatewayClient({ httpUrl: other.httpUrl, metricsUrl: other.metricsUrl, timeoutMs: 2000 }),
      },
    ];
    const sampler = new UsageSampler(
      db.prisma,
      new GatewayClient({ httpUrl: own.httpUrl, metricsUrl: own.metricsUrl }),
      { intervalSecs: 0, retentionDays: 0 },
      logger,
      () => Promise.resolve(listed),
    );
    const baseline = await sampler.sampleNow();
    expect(baseline).toMatchObject({ baseline: true, written: 0, skipped: null });
    expect(baseline.gateways.map((gateway) => [gateway.gatewayHost, gateway.baseline])).toEqual([
      [null, true],
      ["gateway-b:8000", true],
    ]);

    await traffic(own, 3);
    await traffic(other, 7);
    const first = await sampler.sampleNow();
    expect(first).toMatchObject({ baseline: false, written: 2, skipped: null });
    const rows = await db.prisma.usageSample.findMany({ orderBy: { gatewayHost: "asc" } });
    expect(rows.map((row) => [row.gatewayHost, row.requests, row.inferences])).toEqual([
      ["gateway-b:8000", 7, 7],
      [null, 3, 3],
    ]);
    // One sample, one start: the gateways' rows line up, so the readers sum them per start.
    expect(rows[0]!.at).toEqual(rows[1]!.at);
    expect(rows[0]!.intervalSeconds).toBe(rows[1]!.intervalSeconds);
    for (const row of rows) expect(row.latencyP50Ms).not.toBeNull();

    const from = new Date(rows[0]!.at.getTime() - 60_000);
    const to = new Date(rows[0]!.at.getTime() + 60_000);
    const series = await usageTimeSeries(db.prisma, { from, to, bucketSecs: 120 });
    const point = series.overall.find((entry) => entry.requests > 0)!;
    expect(point.requests).toBe(10);
    expect(point.requestsPerSec).toBeCloseTo(10 / rows[0]!.intervalSeconds, 9);
    // Latency weighted by requests (7 and 3), never summed.
    const weighted = (rows[0]!.latencyP50Ms! * 7 + rows[1]!.latencyP50Ms! * 3) / 10;
    expect(point.latencyP50Ms).toBeCloseTo(weighted, 6);
    expect(point.latencyP50Ms!).toBeLessThanOrEqual(Math.max(rows[0]!.latencyP50Ms!, rows[1]!.latencyP50Ms!));
    // CPU: each gateway's share of its own host, added up.
    const cpu = rows.reduce((total, row) => total + (row.cpuUtilization ?? 0), 0);
    expect(point.cpuUtilization).toBeCloseTo(cpu, 9);

    const costs = await usageCosts(db.prisma, { from, to });
    const addSub = costs.models.find((entry) => entry.model === "add_sub")!;
    expect(addSub.inferences).toBe(10);
    // Two hosts of the profile covered the interval: the host cost counts both.
    const [profile] = costs.profiles;
    expect(profile!.coveredHours).toBeCloseTo((2 * rows[0]!.intervalSeconds) / 3600, 9);

    // The cluster gateway goes away (listed, but not answering): the own gateway is still sampled.
    listed = [
      { gatewayHost: "gateway-b:8000", client: new GatewayClient({ httpUrl: "http://127.0.0.1:9", timeoutMs: 1000 }) },
    ];
    await traffic(own, 2);
    const partial = await sampler.sampleNow();
    expect(partial).toMatchObject({ written: 1, skipped: null });
    expect(partial.gateways.find((gateway) => gateway.gatewayHost === "gateway-b:8000")?.skipped).toMatch(
      /not reachable/,
    );
    expect(logger.warnings.join("\n")).toMatch(/usage sample skipped for gateway-b:8000/);
    const latest = await db.prisma.usageSample.findMany({ where: { at: partial.at! } });
    expect(latest.map((row) => [row.gatewayHost, row.requests])).toEqual([[null, 2]]);

    // Still down for two more samples: said once when it began, not once a sample (lasting-failure-log.ts).
    await sampler.sampleNow();
    await sampler.sampleNow();
    const skippedLines = logger.warnings.filter((line) => line.startsWith("usage sample skipped for gateway-b:8000"));
    expect(skippedLines).toHaveLength(1);
    // Back (answering again under its name): said once, and sampled again.
    listed = [
      {
        gatewayHost: "gateway-b:8000",
        client: new GatewayClient({ httpUrl: other.httpUrl, metricsUrl: other.metricsUrl, timeoutMs: 2000 }),
      },
    ];
    const back = await sampler.sampleNow();
    expect(back.gateways.find((gateway) => gateway.gatewayHost === "gateway-b:8000")?.skipped).toBeNull();
    await sampler.sampleNow();
    expect(logger.infos.filter((line) => line.startsWith("the gateway can be read again"))).toEqual([
      "the gateway can be read again (statistics of gateway-b:8000)",
    ]);
  });

  it("compacts each gateway's samples apart", async () => {
    const model = await db.prisma.model.upsert({ where: { name: "add_sub" }, create: { name: "add_sub" }, update: {} });
    const day = new Date("2026-01-02T00:00:00Z");
    const base = { modelId: model.id, modelVersion: 1, intervalSeconds: 15, instanceCount: 1 };
    await db.prisma.usageSample.createMany({
      data: [0, 15, 30].flatMap((offset) => [
        { ...base, at: new Date(day.getTime() + offset * 1000), requests: 2, latencyP50Ms: 10, gatewayHost: null },
        { ...base, at: new Date(day.getTime() + offset * 1000), requests: 6, latencyP50Ms: 30, gatewayHost: "b:1" },
      ]),
    });
    await compactUsageSamples(db.prisma, new Date(day.getTime() + 86_400_000), day);
    const merged = await db.prisma.usageSample.findMany({
      where: { at: { gte: day, lt: new Date(day.getTime() + 86_400_000) } },
      orderBy: { gatewayHost: "asc" },
    });
    expect(merged.map((row) => [row.gatewayHost, row.requests, row.latencyP50Ms, row.intervalSeconds])).toEqual([
      ["b:1", 18, 30, 45],
      [null, 6, 10, 45],
    ]);
  });
});

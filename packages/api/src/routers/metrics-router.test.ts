import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database, UsageSample } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { ControlPlane } from "../control-plane.js";
import { GatewayClient } from "../services/gateway/gateway-client.js";
import { compactUsageSamples } from "../services/usage/usage-compaction.js";
import { UsageSampler } from "../services/usage/usage-sampler.js";
import { PERF_TRAFFIC_PARAMETER, PERF_TRAFFIC_VALUE } from "@operon/protocol/perf-traffic";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { startTestGateway, type TestGateway } from "../testing/gateway-harness.js";
import type { Logger } from "@operon/protocol/logger";

const EXAMPLES = fileURLToPath(new URL("../../../../examples/model_repository", import.meta.url));

let gateway: TestGateway;

beforeAll(async () => {
  // Worker processes: a model's memory is attributed per process (a model on gateway threads shares the gateway's, so it has none of its own).
  gateway = await startTestGateway({
    modelRepositories: [EXAMPLES],
    loadModels: ["add_sub"],
    backendIsolation: "process",
  });
});
afterAll(async () => {
  await gateway?.stop();
});

/** One add_sub request of `items` inferences (a batch): requests count 1, inferences `items`. */
async function batchedRequest(items: number): Promise<void> {
  const client = new GatewayClient({ httpUrl: gateway.httpUrl });
  const data = Array.from({ length: 16 * items }, (_, i) => i % 16);
  await client.infer("add_sub", undefined, {
    inputs: [
      { name: "INPUT0", datatype: "FP32", shape: [items, 16], data },
      { name: "INPUT1", datatype: "FP32", shape: [items, 16], data },
    ],
  });
}

/** `count` add_sub inferences; `failing` more with a wrong shape (the gateway counts them as failures). */
async function traffic(count: number, failing = 0): Promise<void> {
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
  for (let i = 0; i < failing; i += 1) {
    await expect(
      client.infer("add_sub", undefined, {
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [1, 15], data: data.slice(1) },
          { name: "INPUT1", datatype: "FP32", shape: [1, 15], data: data.slice(1) },
        ],
      }),
    ).rejects.toThrow();
  }
}

function capturingLogger(): Logger & { warnings: string[]; infos: string[] } {
  const warnings: string[] = [];
  const infos: string[] = [];
  return {
    warnings,
    infos,
    info: (obj, msg) => void infos.push(msg ?? String(obj)),
    warn: (obj, msg) => void warnings.push(msg ?? String(obj)),
    error: (obj, msg) => void warnings.push(msg ?? String(obj)),
  };
}

/** Resolves once `condition` holds, checked every 50 ms; fails after 15 s. */
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("the condition did not come true within 15 s");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A small deterministic generator, so the synthetic samples vary without being random between runs. */
function sequence(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

describe.each(testDatabaseBackends({ migrated: true }))("usage sampler and metrics router on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(db, { gateway: { httpUrl: gateway.httpUrl, metricsUrl: gateway.metricsUrl } });
  });
  afterAll(async () => {
    await h?.close();
    await db?.close();
    await backend.teardown();
  });

  it("samples the request deltas of real inferences, with latency, queue, workers, CPU and the default profile", async () => {
    const profile = await h
      .as("ADMIN")
      .hardware.create({ name: "this-host", kind: "CPU", cpuCores: 2, costPerHour: 3.6, currency: "USD" });
    const sampler = h.controlPlane.services.usageSampler;
    expect(await sampler.sampleNow()).toMatchObject({ baseline: true, written: 0, skipped: null });

    await traffic(5, 2);
    await batchedRequest(4);
    const first = await sampler.sampleNow();
    expect(first).toMatchObject({ baseline: false, written: 1, skipped: null });
    const model = await db.prisma.model.findUniqueOrThrow({ where: { name: "add_sub" } });
    const [row] = await db.prisma.usageSample.findMany({ where: { modelId: model.id }, orderBy: { id: "asc" } });
    // Eight requests, two failed; nine inferences (five single ones and a batch of four).
    expect(row).toMatchObject({
      modelVersion: 1,
      requests: 8,
      errors: 2,
      inferences: 9,
      instanceCount: 2,
      hardwareProfileId: profile.id,
      at: first.at,
    });
    expect(row!.intervalSeconds).toBeGreaterThanOrEqual(1);
    expect(row!.latencyP50Ms!).toBeGreaterThan(0);
    expect(row!.latencyP50Ms!).toBeLessThanOrEqual(row!.latencyP99Ms!);
    expect(row!.queueTimeMs).not.toBeNull();
    expect(row!.cpuUtilization!).toBeGreaterThanOrEqual(0);
    expect(row!.cpuUtilization!).toBeLessThanOrEqual(1);
    expect(Number(row!.memoryBytes)).toBeGreaterThan(1 << 20);

    await traffic(3);
    await sampler.sampleNow();
    const idle = await sampler.sampleNow();
    const rows = await db.prisma.usageSample.findMany({ where: { modelId: model.id }, orderBy: { id: "asc" } });
    expect(rows.map((sample) => [sample.requests, sample.errors, sample.inferences])).toEqual([
      [8, 2, 9],
      [3, 0, 3],
      [0, 0, 0],
    ]);
    // No traffic: no latency, but the instances are still counted.
    expect(rows[2]).toMatchObject({
      latencyP50Ms: null,
      latencyP99Ms: null,
      queueTimeMs: null,
      instanceCount: 2,
      at: idle.at,
    });
    // The repository model got its row once, audited.
    const { events } = await h.as("ADMIN").audit.list({ action: "model.discover", limit: 5 });
    expect(events.map((event) => event.targetId)).toEqual([model.id]);

    // Costs over these rows follow from them: the profile's price × CPU share × hours.
    const from = new Date(rows[0]!.at.getTime());
    const to = new Date(rows[2]!.at.getTime() + 1);
    const costs = await h.as("VIEWER").metrics.costs({ from, to });
    const expected = rows.reduce(
      (sum, sample) => sum + 3.6 * (sample.cpuUtilization ?? 0) * (sample.intervalSeconds / 3600),
      0,
    );
    const addSub = costs.models.find((entry) => entry.model === "add_sub")!;
    // Costs count inferences, not requests: the batch of four counts four.
    expect(addSub.inferences).toBe(12);
    expect(addSub.cost).toBeCloseTo(expected, 5);
    expect(addSub.profileName).toBe("this-host");
  });

  it("leaves tagged perf requests out of a sample: their requests, latency and CPU (so its cost) (issue 27 item 8)", async () => {
    const sampler = h.controlPlane.services.usageSampler;
    await sampler.sampleNow();
    // Enough perf requests that the worker's CPU time moves by several clock ticks.
    const client = new GatewayClient({ httpUrl: gateway.httpUrl });
    const data = Array.from({ length: 16 }, (_, i) => i);
    for (let i = 0; i < 300; i += 1) {
      await client.infer("add_sub", undefined, {
        inputs: [
          { name: "INPUT0", datatype: "FP32", shape: [1, 16], data },
          { name: "INPUT1", datatype: "FP32", shape: [1, 16], data },
        ],
        parameters: { [PERF_TRAFFIC_PARAMETER]: PERF_TRAFFIC_VALUE },
      });
    }
    const raw = (await client.statistics("add_sub", { raw: true }))[0]!;
    expect(raw.operon_perf_traffic?.inference_count).toBeGreaterThanOrEqual(300);
    await sampler.sampleNow();
    const model = await db.prisma.model.findUniqueOrThrow({ where: { name: "add_sub" } });
    const [row] = await db.prisma.usageSample.findMany({
      where: { modelId: model.id },
      orderBy: { id: "desc" },
      take: 1,
    });
    expect(row).toMatchObject({
      requests: 0,
      inferences: 0,
      latencyP50Ms: null,
      latencyP99Ms: null,
      cpuUtilization: 0,
    });
  });

  it("reads live per-model numbers and the workers from the gateway", async () => {
    await traffic(2);
    const current = await h.as("VIEWER").metrics.current();
    expect(current.unavailable).toEqual([]);
    const addSub = current.models.find((entry) => entry.model === "add_sub")!;
    expect(addSub).toMatchObject({ version: "1", isOperator: false, instances: 2, readyInstances: 2, restarts: 0 });
    expect(addSub.requests).toBeGreaterThanOrEqual(10);
    expect(addSub.errors).toBeGreaterThanOrEqual(2);
    expect(addSub.latencyUs.p50!).toBeGreaterThan(0);
    expect(addSub.avgQueueUs).not.toBeNull();
    expect(addSub.cpuSeconds!).toBeGreaterThanOrEqual(0);
    expect(addSub.memoryBytes!).toBeGreaterThan(0);
    expect(addSub.lastSample?.requestsPerSec).toBe(0);
    expect(current.hostCpuCores).toBeGreaterThan(0);
    expect(current.gateway?.pid).toBe(process.pid);
  });

  it("skips a sample, without throwing, while the gateway is down", async () => {
    const logger = capturingLogger();
    const down = new UsageSampler(
      db.prisma,
      new GatewayClient({ httpUrl: "http://127.0.0.1:9", timeoutMs: 2000 }),
      { intervalSecs: 0, retentionDays: 0 },
      logger,
    );
    const before = await db.prisma.usageSample.count();
    const result = await down.sampleNow();
    expect(result).toMatchObject({ written: 0, baseline: false, skipped: expect.stringMatching(/not reachable/) });
    expect(await db.prisma.usageSample.count()).toBe(before);
    expect(logger.warnings.join("\n")).toMatch(/usage sample skipped/);

    // The background timer keeps going through failures, says a lasting one once (not every second), says when
    // it is over, and stops cleanly. The stand-in gateway fails every read until `up`, then answers the
    // statistics and operator lists (empty) and fails the rest.
    let up = false;
    const standIn = createServer((req, res) => {
      const answer =
        up && req.url === "/v2/models/stats"
          ? { model_stats: [] }
          : up && req.url === "/v2/operators"
            ? { operators: [] }
            : undefined;
      res.writeHead(answer === undefined ? 503 : 200, { "content-type": "application/json" });
      res.end(JSON.stringify(answer ?? { error: "not yet" }));
    });
    await new Promise<void>((resolve) => standIn.listen(0, "127.0.0.1", resolve));
    const dir = mkdtempSync(join(tmpdir(), "operon-sampler-"));
    const timed = capturingLogger();
    const controlPlane = await ControlPlane.create({
      db,
      gateway: { httpUrl: `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`, timeoutMs: 500 },
      modelStoreDir: join(dir, "models"),
      uploadStagingDir: join(dir, "staging"),
      usageSampleIntervalSecs: 1,
      logger: timed,
    });
    try {
      const skipped = (): string[] => timed.warnings.filter((warning) => /usage sample skipped/.test(warning));
      await until(() => skipped().length > 0);
      // Two more samples fail meanwhile (one a second): still the one line.
      await new Promise((resolve) => setTimeout(resolve, 2200));
      expect(skipped()).toHaveLength(1);
      up = true;
      await until(() =>
        timed.infos.includes("the gateway can be read again (statistics of the control plane's gateway)"),
      );
    } finally {
      await controlPlane.stop();
      standIn.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("deletes samples past the retention, keeps the rest, and keeps everything with retention 0", async () => {
    const model = await db.prisma.model.create({ data: { name: "retained" } });
    const now = Date.parse("2021-06-30T12:00:00.000Z");
    const day = 86_400_000;
    for (const age of [31 * day, 30 * day + 1, 30 * day - 1, day]) {
      await db.prisma.usageSample.create({
        data: { modelId: model.id, at: new Date(now - age), intervalSeconds: 15, requests: 1 },
      });
    }
    const ages = async () =>
      (await db.prisma.usageSample.findMany({ where: { modelId: model.id }, orderBy: { at: "asc" } })).map(
        (sample) => now - sample.at.getTime(),
      );
    const forever = new UsageSampler(
      db.prisma,
      new GatewayClient({ httpUrl: gateway.httpUrl }),
      { intervalSecs: 0, retentionDays: 0 },
      capturingLogger(),
    );
    expect(await forever.prune(now)).toBe(0);
    expect(await ages()).toHaveLength(4);

    const infos: string[] = [];
    const logger: Logger = { info: (_obj, msg) => void infos.push(msg ?? ""), warn: () => {}, error: () => {} };
    const monthly = new UsageSampler(
      db.prisma,
      new GatewayClient({ httpUrl: gateway.httpUrl }),
      { intervalSecs: 0, retentionDays: 30 },
      logger,
    );
    expect(await monthly.prune(now)).toBe(2);
    expect(await ages()).toEqual([30 * day - 1, day]);
    expect(infos).toContain("usage samples past the retention removed");
    await db.prisma.model.delete({ where: { id: model.id } });
  });

  describe("charts and costs from stored samples", () => {
    const from = new Date("2020-01-01T00:00:00.000Z");
    const to = new Date("2020-01-01T00:10:00.000Z");
    const written: Array<UsageSample & { model: string }> = [];
    let cheap: { id: string; name: string; costPerHour: number };
    let dear: { id: string; name: string; costPerHour: number };
    /** The GPU part of each profile's price: cheap is a CPU profile, dear says 0.75. */
    const gpuPart = (profileId: string | null): number => (profileId === dear.id ? 0.75 : 0);

    beforeAll(async () => {
      cheap = await h.as("ADMIN").hardware.create({ name: "cheap", kind: "CPU", costPerHour: 2.5, currency: "USD" });
      dear = await h.as("ADMIN").hardware.create({
        name: "dear",
        kind: "GPU",
        gpuModel: "H200",
        gpuCount: 1,
        gpuPriceShare: 0.75,
        costPerHour: 4.25,
        currency: "USD",
      });
      const next = sequence(backend.name.length);
      const models = {
        alpha: await db.prisma.model.create({ data: { name: "alpha" } }),
        beta: await db.prisma.model.create({ data: { name: "beta" } }),
      };
      // One sample a minute for ten minutes: the first five on "cheap", the next four on "dear", the last one without a profile.
      for (let minute = 0; minute < 10; minute += 1) {
        const at = new Date(from.getTime() + minute * 60_000);
        const hardwareProfileId = minute < 5 ? cheap.id : minute < 9 ? dear.id : null;
        for (const [name, model] of Object.entries(models)) {
          const requests = Math.floor(next() * 1000);
          const errors = Math.floor(requests * next() * 0.1);
          // Some requests carry batches: more inferences than successful requests.
          const inferences = (requests - errors) * (1 + Math.floor(next() * 3));
          const p50 = 1 + next() * 5;
          const row = await db.prisma.usageSample.create({
            data: {
              modelId: model.id,
              modelVersion: 1,
              hardwareProfileId,
              at,
              intervalSeconds: 60,
              requests,
              errors,
              inferences,
              latencyP50Ms: requests > 0 ? p50 : null,
              latencyP95Ms: requests > 0 ? p50 * 2 : null,
              latencyP99Ms: requests > 0 ? p50 * 3 : null,
              queueTimeMs: requests > 0 ? next() : null,
              instanceCount: 1 + Math.floor(next() * 3),
              cpuUtilization: name === "beta" && minute === 2 ? null : next() * 0.4,
              memoryBytes: BigInt(Math.floor(next() * 2 ** 30)),
              // On the GPU profile alpha has GPU instances (a share of the GPU) and beta none (0); no GPU readings elsewhere.
              gpuUtilization: hardwareProfileId === dear.id ? (name === "alpha" ? next() * 0.9 : 0) : null,
              gpuMemoryBytes:
                hardwareProfileId === dear.id ? (name === "alpha" ? BigInt(Math.floor(next() * 2 ** 34)) : 0n) : null,
            },
          });
          written.push({ ...row, model: name });
        }
      }
    });

    it("buckets requests, errors, latencies, CPU and memory, overall and per model", async () => {
      const series = await h.as("VIEWER").metrics.timeSeries({ from, to, bucketSecs: 300 });
      expect(series.bucketSecs).toBe(300);
      expect(series.overall.map((point) => point.at)).toEqual([from, new Date(from.getTime() + 300_000)]);
      expect(series.models.map((entry) => entry.model)).toEqual(["alpha", "beta"]);
      for (const [index, start] of [0, 5].entries()) {
        const inBucket = (model?: string) =>
          written.filter(
            (row) =>
              (model === undefined || row.model === model) &&
              row.at.getTime() >= from.getTime() + start * 60_000 &&
              row.at.getTime() < from.getTime() + (start + 5) * 60_000,
          );
        const sum = (rows: typeof written, pick: (row: (typeof written)[number]) => number) =>
          rows.reduce((total, row) => total + pick(row), 0);
        for (const model of ["alpha", "beta"]) {
          const rows = inBucket(model);
          const point = series.models.find((entry) => entry.model === model)!.points[index]!;
          const requests = sum(rows, (row) => row.requests);
          expect(point.requests).toBe(requests);
          expect(point.requestsPerSec).toBeCloseTo(requests / 300, 9);
          expect(point.errorRate).toBeCloseTo(sum(rows, (row) => row.errors) / requests, 9);
          const weighted = rows.filter((row) => row.latencyP99Ms !== null && row.requests > 0);
          expect(point.latencyP99Ms!).toBeCloseTo(
            sum(weighted, (row) => row.latencyP99Ms! * row.requests) / sum(weighted, (row) => row.requests),
            9,
          );
          expect(point.cpuUtilization!).toBeCloseTo(sum(rows, (row) => (row.cpuUtilization ?? 0) * 60) / 300, 9);
          expect(point.instances!).toBeCloseTo(sum(rows, (row) => row.instanceCount * 60) / 300, 9);
          expect(point.memoryBytes!).toBeCloseTo(sum(rows, (row) => Number(row.memoryBytes) * 60) / 300, 0);
          // GPU figures: time-weighted over the bucket; null where no sample had a GPU reading (the first bucket).
          if (rows.every((row) => row.gpuUtilization === null)) expect(point.gpuUtilization).toBeNull();
          else {
            expect(point.gpuUtilization!).toBeCloseTo(sum(rows, (row) => (row.gpuUtilization ?? 0) * 60) / 300, 9);
            expect(point.gpuMemoryBytes!).toBeCloseTo(
              sum(rows, (row) => Number(row.gpuMemoryBytes ?? 0n) * 60) / 300,
              0,
            );
          }
        }
        const overall = series.overall[index]!;
        expect(overall.requests).toBe(sum(inBucket(), (row) => row.requests));
        expect(overall.requestsPerSec).toBeCloseTo(sum(inBucket(), (row) => row.requests) / 300, 9);
        expect(overall.errorsPerSec).toBeCloseTo(sum(inBucket(), (row) => row.errors) / 300, 9);
      }
      const onlyBeta = await h.as("VIEWER").metrics.timeSeries({ from, to, model: "beta" });
      expect(onlyBeta.models.map((entry) => entry.model)).toEqual(["beta"]);
      expect(onlyBeta.overall.reduce((total, point) => total + point.requests, 0)).toBe(
        written.filter((row) => row.model === "beta").reduce((total, row) => total + row.requests, 0),
      );
      // A bucket with no sample is a gap, not a zero.
      const later = await h
        .as("VIEWER")
        .metrics.timeSeries({ from: to, to: new Date(to.getTime() + 600_000), bucketSecs: 600 });
      expect(later.overall[0]).toMatchObject({ requests: 0, requestsPerSec: null, cpuUtilization: null });
    });

    it("costs models by CPU share and, on a GPU profile, by GPU share, with the idle share; samples taken without a profile on the default", async () => {
      const costs = await h.as("VIEWER").metrics.costs({ from, to });
      // The last minute's samples, taken without a profile, are costed on today's default ("this-host", the first
      // profile made) (issue 27 item 10), and nothing is left uncosted.
      const host = (await h.as("VIEWER").hardware.list()).find((profile) => profile.isDefault)!;
      expect(host.name).toBe("this-host");
      const unprofiled = written.filter((row) => row.hardwareProfileId === null);
      expect(costs.costedOnDefault).toEqual({
        profileId: host.id,
        profileName: "this-host",
        inferences: unprofiled.reduce((sum, row) => sum + row.inferences, 0),
        coveredHours: 60 / 3600,
      });
      expect(costs.unprofiled).toEqual([]);
      const onHost = costs.profiles.find((profile) => profile.profileId === host.id)!;
      expect(onHost.coveredHours).toBeCloseTo(60 / 3600, 9);
      expect(onHost.hostCost).toBeCloseTo(host.costPerHour / 60, 6);
      for (const model of ["alpha", "beta"]) {
        const own = unprofiled.filter((row) => row.model === model);
        const line = onHost.models.find((candidate) => candidate.model === model)!;
        expect(line.inferences).toBe(own.reduce((sum, row) => sum + row.inferences, 0));
        expect(line.cost).toBeCloseTo(
          own.reduce(
            (sum, row) => sum + host.costPerHour * (row.cpuUtilization ?? 0) * (row.intervalSeconds / 3600),
            0,
          ),
          5,
        );
      }
      for (const profile of [cheap, dear]) {
        const rows = written.filter((row) => row.hardwareProfileId === profile.id);
        const coveredHours = (new Set(rows.map((row) => row.at.getTime())).size * 60) / 3600;
        const entry = costs.profiles.find((candidate) => candidate.profileId === profile.id)!;
        expect(entry.coveredHours).toBeCloseTo(coveredHours, 9);
        expect(entry.hostCost).toBeCloseTo(profile.costPerHour * coveredHours, 6);
        let attributed = 0;
        for (const model of ["alpha", "beta"]) {
          const own = rows.filter((row) => row.model === model);
          const g = gpuPart(profile.id);
          const cpuCost = own.reduce(
            (sum, row) =>
              sum + profile.costPerHour * (1 - g) * (row.cpuUtilization ?? 0) * (row.intervalSeconds / 3600),
            0,
          );
          const gpuCost = own.reduce(
            (sum, row) => sum + profile.costPerHour * g * (row.gpuUtilization ?? 0) * (row.intervalSeconds / 3600),
            0,
          );
          const cost = cpuCost + gpuCost;
          const inferences = own.reduce((sum, row) => sum + row.inferences, 0);
          attributed += cost;
          const line = entry.models.find((candidate) => candidate.model === model)!;
          expect(line.inferences).toBe(inferences);
          expect(line.cpuCost).toBeCloseTo(cpuCost, 5);
          expect(line.gpuCost).toBeCloseTo(gpuCost, 5);
          // Only alpha ran on the GPU: beta's GPU cost is 0 on both profiles, alpha's is not on the GPU one.
          if (model === "beta" || g === 0) expect(line.gpuCost).toBe(0);
          else expect(line.gpuCost).toBeGreaterThan(0);
          expect(line.cost).toBeCloseTo(cost, 5);
          expect(line.costPerHour).toBeCloseTo(cost / coveredHours, 5);
          expect(line.costPer1000Inferences!).toBeCloseTo((cost / inferences) * 1000, 5);
          expect(costs.models).toContainEqual(line);
        }
        expect(entry.gpuPriceShare).toBe(gpuPart(profile.id));
        expect(entry.attributedCost).toBeCloseTo(attributed, 5);
        expect(entry.unattributedCost).toBeCloseTo(profile.costPerHour * coveredHours - attributed, 5);
        expect(entry.unattributedShare!).toBeCloseTo(
          (profile.costPerHour * coveredHours - attributed) / (profile.costPerHour * coveredHours),
          6,
        );
      }
    });

    it("counts the time of versions sampled together once, and puts a sample in the bucket its interval starts in", async () => {
      const day = new Date("2020-01-02T00:00:00.000Z");
      const gamma = await db.prisma.model.create({ data: { name: "gamma" } });
      const sample = (modelVersion: number, offsetMs: number, requests: number, instanceCount: number) =>
        db.prisma.usageSample.create({
          data: {
            modelId: gamma.id,
            modelVersion,
            at: new Date(day.getTime() + offsetMs),
            intervalSeconds: 60,
            requests,
            errors: 0,
            latencyP50Ms: modelVersion,
            instanceCount,
            cpuUtilization: 0.25,
          },
        });
      // Versions 1 and 2 share one 60 s interval; a third sample starts 1 ms before the second bucket, a fourth exactly at it.
      await sample(1, 0, 10, 1);
      await sample(2, 0, 30, 2);
      await sample(1, 299_999, 60, 1);
      await sample(1, 300_000, 90, 1);
      const series = await h
        .as("VIEWER")
        .metrics.timeSeries({ from: day, to: new Date(day.getTime() + 600_000), model: "gamma", bucketSecs: 300 });
      const [first, second] = series.models[0]!.points;
      // Two intervals covered (the shared start once): 100 requests over 120 s.
      expect(first).toMatchObject({ requests: 100 });
      expect(first!.requestsPerSec).toBeCloseTo(100 / 120, 9);
      // Instances add up across versions: (1 + 2) × 60 s + 1 × 60 s over 120 s.
      expect(first!.instances).toBeCloseTo(240 / 120, 9);
      expect(first!.cpuUtilization).toBeCloseTo((0.25 * 180) / 120, 9);
      // p50 weighted by requests: (1×10 + 2×30 + 1×60) / 100.
      expect(first!.latencyP50Ms).toBeCloseTo(130 / 100, 9);
      expect(second).toMatchObject({ requests: 90 });
      expect(second!.requestsPerSec).toBeCloseTo(90 / 60, 9);
    });

    it("merges day-old samples into 5-minute samples without changing the charts or the costs", async () => {
      const sampler = h.controlPlane.services.usageSampler;
      const ranges = [
        { from, to },
        { from: new Date("2020-01-02T00:00:00.000Z"), to: new Date("2020-01-02T00:10:00.000Z") },
      ];
      const read = async () =>
        Promise.all(
          ranges.map(async (range) => ({
            series: await h.as("VIEWER").metrics.timeSeries({ ...range, bucketSecs: 300 }),
            costs: await h.as("VIEWER").metrics.costs(range),
          })),
        );
      const before = await read();
      const rowsBefore = await db.prisma.usageSample.count({
        where: { at: { lt: new Date("2020-01-03T00:00:00.000Z") } },
      });

      const result = await sampler.compact(Date.parse("2021-01-01T00:00:00.000Z"));
      expect(result.removed).toBeGreaterThan(result.written);
      const rowsAfter = await db.prisma.usageSample.count({
        where: { at: { lt: new Date("2020-01-03T00:00:00.000Z") } },
      });
      expect(rowsAfter).toBe(rowsBefore - result.removed + result.written);
      // alpha and beta: 10 samples each become one per profile and window (cheap 0-5, dear 5-9, none 9-10).
      expect(await db.prisma.usageSample.count({ where: { model: { name: "alpha" } } })).toBe(3);
      // Idempotent: a full pass over the merged samples changes nothing.
      expect(await compactUsageSamples(db.prisma, new Date("2021-01-01T00:00:00.000Z"))).toMatchObject({
        removed: 0,
        written: 0,
      });

      const after = await read();
      for (const [index, { series, costs }] of after.entries()) {
        const earlier = before[index]!;
        for (const [modelIndex, entry] of series.models.entries()) {
          for (const [pointIndex, point] of entry.points.entries()) {
            const was = earlier.series.models[modelIndex]!.points[pointIndex]!;
            expect(point.requests).toBe(was.requests);
            expect(point.errors).toBe(was.errors);
            for (const key of [
              "requestsPerSec",
              "latencyP50Ms",
              "latencyP95Ms",
              "latencyP99Ms",
              "queueMs",
              "cpuUtilization",
              "memoryBytes",
            ] as const) {
              if (was[key] === null) expect(point[key]).toBeNull();
              else expect(point[key]).toBeCloseTo(was[key], key === "memoryBytes" ? -1 : 6);
            }
            // Instance counts are integers: a merged sample holds the rounded time-weighted mean.
            if (was.instances !== null) expect(Math.abs(point.instances! - was.instances)).toBeLessThanOrEqual(0.5);
          }
        }
        expect(
          costs.profiles.map((profile) => [
            profile.name,
            profile.coveredHours,
            profile.attributedCost,
            profile.inferences,
          ]),
        ).toEqual(
          earlier.costs.profiles.map((profile) => [
            profile.name,
            expect.closeTo(profile.coveredHours, 9),
            expect.closeTo(profile.attributedCost, 6),
            profile.inferences,
          ]),
        );
        expect(costs.unprofiled).toEqual(earlier.costs.unprofiled);
      }
    });

    it("rejects empty or oversized ranges with the field named", async () => {
      await expect(h.as("VIEWER").metrics.costs({ from: to, to: from })).rejects.toThrow(/`to` must be after `from`/);
      await expect(
        h.as("VIEWER").metrics.timeSeries({ from, to: new Date(from.getTime() + 30 * 86_400_000), bucketSecs: 60 }),
      ).rejects.toThrow(/at most 1000/);
      expect(await appCodeOf(h.as(null).metrics.timeSeries({ from, to }))).toBe("UNAUTHENTICATED");
    });
  });
});

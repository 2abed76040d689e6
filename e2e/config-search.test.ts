import { createHash } from "node:crypto";
import { writeMlpModel } from "@operon/testing/onnx-model-writer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorOf, type ApiSession } from "./support/api-client.js";
import { signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import type { RunningOperon } from "./support/operon-process.js";

// The config search as an engineer runs it through the API: upload a small
// model, search its config with tiny measurement windows, read the stored
// candidates, check the gateway is left as it was (no shadow model
// serving), and apply the recommended candidate as the model's config.

const MODEL = "search-mlp";

/** Small windows: the search must finish in seconds on a 2-core machine. */
const TINY = {
  bounds: {
    maxInstances: 2,
    maxBatchSize: 8,
    queueDelaysUs: [0, 500],
    maxCandidates: 5,
    maxDurationMs: 120_000,
    minGainPercent: 0,
  },
  measurement: { maxConcurrency: 2, measurementIntervalMs: 150, maxTrials: 3 },
};

async function uploadModel(session: ApiSession, name: string): Promise<void> {
  const bytes = writeMlpModel({ sizes: [4, 8, 2], seed: 7 });
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const begun = await session.client.models.upload.begin.mutate({
    name,
    fileName: `${name}.onnx`,
    sizeBytes: bytes.length,
    sha256,
  });
  await session.client.models.upload.chunk.mutate({
    uploadId: begun.uploadId,
    offset: 0,
    data: bytes.toString("base64"),
  });
  await session.client.models.upload.inspect.mutate({ uploadId: begun.uploadId });
  await session.client.models.upload.finish.mutate({ uploadId: begun.uploadId });
}

async function waitForEnd(
  session: ApiSession,
  id: string,
  timeoutMs = 120_000,
): Promise<Awaited<ReturnType<ApiSession["client"]["configSearch"]["get"]["query"]>>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const search = await session.client.configSearch.get.query({ id });
    if (search.status !== "RUNNING") return search;
    if (Date.now() > deadline)
      throw new Error(`config search ${id} still running after ${timeoutMs} ms (${search.candidateCount} candidates)`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe("config search through the real server", () => {
  let server: RunningOperon;
  let session: ApiSession;
  let adminKey: string;

  const gatewayIndex = async (): Promise<Array<{ name: string; state: string }>> => {
    const response = await fetch(`${server.httpUrl}/v2/repository/index`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(response.status).toBe(200);
    return (await response.json()) as Array<{ name: string; state: string }>;
  };

  beforeAll(async () => {
    // Sampling every second: the shadow models must not turn up in usage (or as discovered models).
    server = await startControlPlaneServer(["--usage-sample-secs", "1"]);
    session = await signedIn(server);
    adminKey = (await session.client.apiKeys.create.mutate({ name: "search-test", scopes: ["admin", "infer"] })).key;
    await session.client.hardware.create.mutate({
      name: "test-host",
      kind: "CPU",
      cpuCores: 2,
      costPerHour: 1.2,
      currency: "USD",
    });
    await uploadModel(session, MODEL);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  let searchId: string;

  it("searches, storing every candidate, and holds the perf slot while it runs", async () => {
    const { id } = await session.client.configSearch.start.mutate({
      model: MODEL,
      objective: "MAX_THROUGHPUT",
      p99BudgetMs: 2000,
      ...TINY,
    });
    searchId = id;
    // One measurement at a time: a perf run queues behind the search, a second search is refused.
    const perf = await session.client.perf.start.mutate({
      target: { kind: "MODEL", name: MODEL },
      concurrency: { start: 1, end: 1, step: 1 },
    });
    expect(perf.status).toBe("QUEUED");
    const second = await apiErrorOf(
      session.client.configSearch.start.mutate({ model: MODEL, objective: "MAX_THROUGHPUT", p99BudgetMs: 2000 }),
    );
    expect(second.appCode).toBe("CONFLICT");
    expect(second.message).toMatch(/config search of 'search-mlp'/);

    const search = await waitForEnd(session, id);
    expect(search.status, search.error ?? "").toBe("SUCCEEDED");
    expect(search.candidates.length).toBeGreaterThanOrEqual(2);
    expect(search.candidates.length).toBeLessThanOrEqual(TINY.bounds.maxCandidates);
    expect(search.candidates[0]!.dimension).toBe("baseline");
    // The suggested config of an upload: one instance, max batch 4, dynamic batching on.
    expect(search.candidates[0]).toMatchObject({ instanceCount: 1, maxBatchSize: 4 });
    for (const candidate of search.candidates) {
      expect(candidate.error).toBeNull();
      expect(candidate.throughput).toBeGreaterThan(0);
      expect(candidate.latencyP99Us).toBeGreaterThan(0);
      expect(candidate.steps.length).toBeGreaterThanOrEqual(1);
      // Priced with the default profile: 1.2/h × min(1, instances/2 cores).
      expect(candidate.costPer1000).toBeCloseTo(
        ((1.2 * Math.min(1, candidate.instanceCount / 2)) / (candidate.throughput * 3600)) * 1000,
        6,
      );
      expect(candidate.instanceCount).toBeLessThanOrEqual(2);
      expect(candidate.maxBatchSize).toBeLessThanOrEqual(8);
    }
    expect(search.recommendedIndex).not.toBeNull();
    const recommended = search.candidates[search.recommendedIndex!]!;
    expect(recommended.withinBudget).toBe(true);
    expect(recommended.throughput).toBe(
      Math.max(...search.candidates.filter((c) => c.withinBudget).map((c) => c.throughput)),
    );
    expect(recommended.pareto).toBe(true);
    expect(search.hardware).toMatchObject({ name: "test-host", costPerHour: 1.2 });

    const listed = await session.client.configSearch.list.query({ model: MODEL });
    expect(listed.map((entry) => entry.id)).toContain(id);
  }, 150_000);

  it("leaves the gateway as it was: no shadow model serving, the live model untouched and hidden shadows", async () => {
    const index = await gatewayIndex();
    expect(index.filter((entry) => entry.name.includes(".search-") && entry.state === "READY")).toEqual([]);
    expect(index.find((entry) => entry.name === MODEL)?.state).toBe("READY");
    const { models } = await session.client.models.list.query();
    expect(models.map((model) => model.name).filter((name) => name.includes(".search-"))).toEqual([]);
    const discovered = (await session.client.audit.list.query({ action: "model.discover" })).events.map((event) =>
      JSON.stringify(event.after),
    );
    expect(discovered.filter((text) => text.includes(".search-"))).toEqual([]);
  });

  it("applies the recommended candidate as a config edit the gateway serves, audited with the search", async () => {
    const search = await session.client.configSearch.get.query({ id: searchId });
    const recommended = search.candidates[search.recommendedIndex!]!;
    const applied = await session.client.configSearch.applyCandidate.mutate({ id: searchId });
    expect(applied.appliedIndex).toBe(search.recommendedIndex);
    expect(applied.config.max_batch_size).toBe(recommended.maxBatchSize);
    expect(applied.config.instance_group?.[0]?.count).toBe(recommended.instanceCount);

    const served = (await (
      await fetch(`${server.httpUrl}/v2/models/${MODEL}/config`, { headers: { authorization: `Bearer ${adminKey}` } })
    ).json()) as {
      max_batch_size: number;
      instance_group: Array<{ count: number }>;
      dynamic_batching?: { max_queue_delay_microseconds?: number | string };
    };
    expect(served.max_batch_size).toBe(recommended.maxBatchSize);
    expect(served.instance_group.reduce((sum, group) => sum + group.count, 0)).toBe(recommended.instanceCount);
    expect(Number(served.dynamic_batching?.max_queue_delay_microseconds ?? 0)).toBe(
      recommended.dynamicBatching?.maxQueueDelayUs ?? 0,
    );

    const infer = await fetch(`${server.httpUrl}/v2/models/${MODEL}/infer`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${adminKey}` },
      body: JSON.stringify({ inputs: [{ name: "input", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] }),
    });
    expect(infer.status).toBe(200);

    expect((await session.client.configSearch.get.query({ id: searchId })).appliedIndex).toBe(search.recommendedIndex);
    const edit = (await session.client.audit.list.query({ action: "model.updateConfig", targetId: MODEL })).events[0]!;
    expect(edit.after).toMatchObject({ source: { configSearch: searchId, candidate: search.recommendedIndex } });
    const apply = (await session.client.audit.list.query({ action: "configSearch.apply", targetId: searchId }))
      .events[0]!;
    expect(apply.after).toMatchObject({ model: MODEL, appliedIndex: search.recommendedIndex });
  });

  it("cancels a search, keeping what it measured and unloading its shadow", async () => {
    const { id } = await session.client.configSearch.start.mutate({
      model: MODEL,
      objective: "MIN_COST",
      p99BudgetMs: 2000,
      bounds: { ...TINY.bounds, maxCandidates: 20 },
      measurement: { ...TINY.measurement, measurementIntervalMs: 400, maxTrials: 10 },
    });
    const deadline = Date.now() + 60_000;
    while ((await session.client.configSearch.get.query({ id })).measuring === null && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const cancelled = await session.client.configSearch.cancel.mutate({ id });
    expect(cancelled.status).toBe("CANCELLED");
    expect(cancelled.error).toMatch(/cancelled by admin@example.com/);
    expect(
      (await gatewayIndex()).filter((entry) => entry.name.includes(".search-") && entry.state === "READY"),
    ).toEqual([]);
    expect((await apiErrorOf(session.client.configSearch.cancel.mutate({ id }))).appCode).toBe("CONFLICT");
    // The perf slot is free again.
    const perf = await session.client.perf.start.mutate({
      target: { kind: "MODEL", name: MODEL },
      concurrency: { start: 1, end: 1, step: 1 },
      measurementIntervalMs: 100,
      maxTrials: 3,
    });
    await session.client.perf.cancel.mutate({ id: perf.id });
  }, 90_000);

  it("refuses bad input with a clear error", async () => {
    const notUploaded = await apiErrorOf(
      session.client.configSearch.start.mutate({ model: "add_sub", objective: "MAX_THROUGHPUT", p99BudgetMs: 10 }),
    );
    expect(notUploaded.appCode).toBe("NOT_FOUND");
    expect(notUploaded.message).toMatch(/not an uploaded model/);
    expect(
      (
        await apiErrorOf(
          session.client.configSearch.start.mutate({ model: MODEL, objective: "MAX_THROUGHPUT", p99BudgetMs: -1 }),
        )
      ).appCode,
    ).toBe("VALIDATION_FAILED");
    expect(
      (await apiErrorOf(session.client.configSearch.applyCandidate.mutate({ id: searchId, index: 99 }))).message,
    ).toMatch(/has no candidate 99/);
    expect(
      (await apiErrorOf(session.client.configSearch.get.query({ id: "00000000-0000-4000-8000-000000000000" }))).appCode,
    ).toBe("NOT_FOUND");
  });
});

import { createHash } from "node:crypto";
import { writeMlpModel } from "@operon/testing/onnx-model-writer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorOf, type ApiSession } from "../support/api-client.js";
import { signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import { grpcClient } from "../support/grpc-client.js";
import type { RunningOperon } from "../support/operon-process.js";

// Issue 28, item 12: config-search shadow models (<model>.search-<8 hex>) were served to anyone,
// without a key, while they were measured; and an upload named like one was taken for a shadow.

const MODEL = "shadowed";
const FAKE_SHADOW = "mine.search-0123abcd";

async function uploadModel(session: ApiSession, name: string): Promise<void> {
  const bytes = writeMlpModel({ sizes: [4, 8, 2], seed: 3 });
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
  await session.client.models.upload.finish.mutate({ uploadId: begun.uploadId });
}

describe("config-search shadow models are the search's alone", () => {
  let server: RunningOperon;
  let admin: ApiSession;
  let adminKey: string;
  beforeAll(async () => {
    server = await startControlPlaneServer();
    admin = await signedIn(server);
    await admin.client.perf.updateSettings.mutate({ enabled: false });
    adminKey = (await admin.client.apiKeys.create.mutate({ name: "ops", scopes: ["admin", "infer"] })).key;
    await uploadModel(admin, MODEL);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("serves a shadow to nobody but the search while it is measured, over HTTP and gRPC, even to an admin key", async () => {
    const { id } = await admin.client.configSearch.start.mutate({
      model: MODEL,
      objective: "MAX_THROUGHPUT",
      p99BudgetMs: 5000,
      bounds: { maxInstances: 2, maxBatchSize: 0, maxCandidates: 2, maxDurationMs: 60_000, minGainPercent: 0 },
      measurement: { maxConcurrency: 1, measurementIntervalMs: 1000, maxTrials: 3 },
    });
    const shadow = `${MODEL}.search-${id.replace(/-/g, "").slice(0, 8)}`;
    const auth = { authorization: `Bearer ${adminKey}` };
    // The shadow is loaded: the gateway's workers list shows its instance.
    let loaded = false;
    for (let i = 0; i < 400 && !loaded; i += 1) {
      const workers = (await (await fetch(`${server.httpUrl}/v2/operon/workers`, { headers: auth })).json()) as {
        workers: Array<{ model: string }>;
      };
      loaded = workers.workers.some((worker) => worker.model === shadow);
      if (!loaded) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(loaded).toBe(true);
    for (const headers of [{}, auth]) {
      const metadata = await fetch(`${server.httpUrl}/v2/models/${shadow}`, { headers });
      expect(metadata.status).toBe(404);
      expect(((await metadata.json()) as { error: string }).error).toBe(
        `Request for unknown model: '${shadow}' is not found`,
      );
      const infer = await fetch(`${server.httpUrl}/v2/models/${shadow}/infer`, {
        method: "POST",
        headers,
        body: JSON.stringify({ inputs: [{ name: "x", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] }),
      });
      expect(infer.status).toBe(404);
      const unload = await fetch(`${server.httpUrl}/v2/repository/models/${shadow}/unload`, {
        method: "POST",
        headers: auth,
      });
      expect(unload.status).toBe(400);
    }
    const grpc = grpcClient(server.grpcAddress);
    try {
      await expect(grpc.call("ModelMetadata", { name: shadow })).rejects.toMatchObject({ code: 5 }); // NOT_FOUND
    } finally {
      grpc.close();
    }
    // The search itself was served: its candidates have figures.
    let search = await admin.client.configSearch.get.query({ id });
    for (let i = 0; i < 600 && search.status === "RUNNING"; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      search = await admin.client.configSearch.get.query({ id });
    }
    expect(search.status, search.error ?? "").toBe("SUCCEEDED");
    expect(search.candidates[0]!.throughput).toBeGreaterThan(0);
  });

  it("refuses uploads and gateway loads of a name in the reserved pattern", async () => {
    const upload = await apiErrorOf(
      admin.client.models.upload.begin.mutate({
        name: FAKE_SHADOW,
        fileName: "m.onnx",
        sizeBytes: 10,
        sha256: "0".repeat(64),
      }),
    );
    expect(upload.appCode).toBe("VALIDATION_FAILED");
    expect(upload.message).toMatch(
      /names ending in '\.search-<8 hex digits>' are reserved for the config search's shadow models/,
    );
    const load = await fetch(`${server.httpUrl}/v2/repository/models/${FAKE_SHADOW}/load`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminKey}` },
    });
    expect(load.status).toBe(400);
    expect(((await load.json()) as { error: string }).error).toBe(
      `model '${FAKE_SHADOW}': names ending in '.search-<8 hex digits>' are reserved for the config search's shadow models; choose another name`,
    );
  });
});

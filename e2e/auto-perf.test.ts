import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiSession } from "./support/api-client.js";
import { signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import { EXAMPLE_REPOSITORY, type RunningOperon } from "./support/operon-process.js";

// Automatic perf reports through the real server: an upload queues a run
// that nobody starts, it ends SUCCEEDED with samples, a second version is
// compared with the first, and turning automatic runs off stops all that.
// The plan is kept tiny (concurrency 1..2, short windows) so this takes seconds.
const ADD_SUB = readFileSync(join(EXAMPLE_REPOSITORY, "add_sub", "1", "model.onnx"));

async function upload(session: ApiSession, name: string): Promise<{ version: number }> {
  const begun = await session.client.models.upload.begin.mutate({
    name,
    fileName: "model.onnx",
    sizeBytes: ADD_SUB.length,
    sha256: createHash("sha256").update(ADD_SUB).digest("hex"),
  });
  await session.client.models.upload.chunk.mutate({
    uploadId: begun.uploadId,
    offset: 0,
    data: ADD_SUB.toString("base64"),
  });
  return session.client.models.upload.finish.mutate({ uploadId: begun.uploadId });
}

async function latestDone(session: ApiSession, name: string, version: string) {
  for (let i = 0; i < 600; i += 1) {
    const { report } = await session.client.perf.latest.query({ kind: "MODEL", name });
    if (
      report !== null &&
      report.targetVersion === version &&
      report.status !== "QUEUED" &&
      report.status !== "RUNNING"
    )
      return report;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no finished automatic report for ${name} v${version}`);
}

describe("automatic perf reports", () => {
  let server: RunningOperon;
  let admin: ApiSession;

  beforeAll(async () => {
    server = await startControlPlaneServer();
    admin = await signedIn(server);
    await admin.client.perf.updateSettings.mutate({
      maxConcurrency: 2,
      measurementIntervalMs: 200,
      maxTrials: 3,
      timeBoundSecs: 20,
    });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("an upload queues a run nobody starts; it succeeds with samples; the next version is compared with it", async () => {
    expect(await upload(admin, "auto_adder")).toMatchObject({ version: 1 });
    const first = await latestDone(admin, "auto_adder", "1");
    expect(first).toMatchObject({
      status: "SUCCEEDED",
      trigger: "AUTOMATIC",
      cause: "model.upload version 1",
      createdBy: null,
      error: null,
    });
    const report = await admin.client.perf.get.query({ id: first.id });
    expect(report.samples.map((sample) => sample.concurrency)).toEqual([1, 2].slice(0, report.samples.length));
    expect(report.samples.length).toBeGreaterThan(0);
    expect(report.samples.every((sample) => sample.throughput > 0 && sample.errorCount === 0)).toBe(true);
    expect(report.hostLoad).toMatchObject({ requestsPerSecAtStart: 0 });
    expect(report.hostLoad!.otherRequestsPerSec).not.toBeNull();

    expect(await upload(admin, "auto_adder")).toMatchObject({ version: 2 });
    const second = await latestDone(admin, "auto_adder", "2");
    expect(second).toMatchObject({ status: "SUCCEEDED", cause: "model.version version 2" });
    const versions = await admin.client.perf.versions.query({ model: "auto_adder" });
    expect(versions.map((entry) => entry.version)).toEqual(["2", "1"]);
    expect(versions[0]!.comparison).toMatchObject({
      version: "2",
      previousVersion: "1",
      concurrency: expect.any(Number),
    });
    expect(versions[0]!.comparison!.text).toMatch(/^v2 is .* at c\d+ (than|as) v1/);
    const { events } = await admin.client.audit.list.query({ action: "perf.", limit: 50 });
    expect(
      events
        .filter((event) => event.targetId === first.id)
        .map((event) => event.action)
        .reverse(),
    ).toEqual(["perf.queue", "perf.start", "perf.finish"]);
  }, 120_000);

  it("runs while other models serve a steady 50 requests/s, and records that background load (issue 27 item 3)", async () => {
    // Before: the gate waited for <= 1 request/s of *all* traffic, so this report waited maxWaitSecs and failed.
    await admin.client.perf.updateSettings.mutate({ maxWaitSecs: 20 });
    const body = JSON.stringify({
      inputs: ["INPUT0", "INPUT1"].map((name) => ({
        name,
        datatype: "FP32",
        shape: [1, 16],
        data: Array.from({ length: 16 }, (_, i) => i),
      })),
    });
    let stop = false;
    let served = 0;
    const load = (async () => {
      const started = Date.now();
      while (!stop) {
        const response = await fetch(`${server.httpUrl}/v2/models/add_sub/infer`, { method: "POST", body });
        if (response.ok) served += 1;
        await response.arrayBuffer();
        // About 50 requests/s, paced from the start so a slow request does not lower the rate.
        const due = started + served * 20;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())));
      }
    })();
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(await upload(admin, "auto_busy")).toMatchObject({ version: 1 });
      const report = await latestDone(admin, "auto_busy", "1");
      expect(report.error).toBeNull();
      expect(report.status).toBe("SUCCEEDED");
      expect(report.hostLoad).toMatchObject({ requestsPerSecAtStart: 0, idleCoresAtStart: expect.any(Number) });
      expect(report.hostLoad!.otherRequestsPerSec).toBeGreaterThan(20);
    } finally {
      stop = true;
      await load;
    }
    expect(served).toBeGreaterThan(100);
  }, 120_000);

  it("turned off, an upload queues nothing", async () => {
    expect(await admin.client.perf.updateSettings.mutate({ enabled: false })).toMatchObject({ enabled: false });
    await upload(admin, "auto_off");
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await admin.client.perf.latest.query({ kind: "MODEL", name: "auto_off" })).toEqual({
      report: null,
      progress: null,
    });
    expect((await admin.client.perf.queue.query()).runs).toEqual([]);
  }, 60_000);
});

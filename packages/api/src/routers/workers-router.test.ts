import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@operon/db";
import { testDatabaseBackends } from "@operon/db/testing/test-databases";
import { createInProcessContext } from "../context.js";
import { ControlPlane } from "../control-plane.js";
import { createCaller } from "../root.js";
import { appCodeOf, createControlPlaneHarness, type ControlPlaneHarness } from "../testing/control-plane-harness.js";
import { startTestGateway, type TestGateway } from "../testing/gateway-harness.js";

const EXAMPLES = fileURLToPath(new URL("../../../../examples/model_repository", import.meta.url));

let gateway: TestGateway;

beforeAll(async () => {
  // On threads (not "auto", which puts the tiny add_sub on the event loop): the thread rows are what this checks.
  gateway = await startTestGateway({ modelRepositories: [EXAMPLES], loadModels: ["add_sub"], backendIsolation: "thread" });
});
afterAll(async () => {
  await gateway?.stop();
});

describe.each(testDatabaseBackends())("workers router on $name", (backend) => {
  let db: Database;
  let h: ControlPlaneHarness;
  let down: ControlPlane | undefined;

  beforeAll(async () => {
    db = await backend.setup();
    h = await createControlPlaneHarness(db, { gateway: { httpUrl: gateway.httpUrl, metricsUrl: gateway.metricsUrl } });
  });
  afterAll(async () => {
    await h?.close();
    await down?.stop();
    await db?.close();
    await backend.teardown();
  });

  it("lists the gateway's backend instances (ONNX Runtime on the gateway's threads), the gateway process and the host's cores to viewers", async () => {
    const list = await h.as("VIEWER").workers.list();
    expect(list.hostCpuCores).toBeGreaterThan(0);
    expect(list.gateway.pid).toBe(process.pid);
    expect(list.workers.map((worker) => worker.instance).sort()).toEqual(["add_sub_0_0", "add_sub_0_1"]);
    for (const worker of list.workers) {
      expect(worker).toMatchObject({
        model: "add_sub",
        version: "1",
        backend: "onnxruntime",
        kind: "CPU",
        device: null,
        state: "READY",
        restarts: 0,
      });
      // Threads of the gateway: its pid, their own CPU time, their memory counted in the gateway's.
      expect(worker).toMatchObject({ isolation: "thread", pid: process.pid, rssBytes: null });
      expect(worker.cpuSeconds).toBeGreaterThanOrEqual(0);
    }
    expect(await appCodeOf(h.as(null).workers.list())).toBe("UNAUTHENTICATED");
    // Where the gateway runs ONNX instances whose config names no operon_isolation: the upload form says it.
    expect(list.defaultIsolation).toBe("thread");
  });

  it("says the gateway is unavailable when it is down", async () => {
    // A second control plane over the same database, pointed at a closed port.
    const dir = mkdtempSync(join(tmpdir(), "operon-workers-"));
    down = await ControlPlane.create({
      db,
      gateway: { httpUrl: "http://127.0.0.1:9", timeoutMs: 2000 },
      modelStoreDir: join(dir, "models"),
      uploadStagingDir: join(dir, "staging"),
      usageSampleIntervalSecs: 0,
    });
    rmSync(dir, { recursive: true, force: true });
    const viewer = createCaller(createInProcessContext(down.services, h.users.VIEWER));
    await expect(viewer.workers.list()).rejects.toThrow(/not reachable/);
    expect(await appCodeOf(viewer.workers.list())).toBe("GATEWAY_UNAVAILABLE");
  });
});

describe("the gateway's default isolation", () => {
  it("is reported as --backend-isolation process says, so the upload form does not claim threads (issue 27 item 7)", async () => {
    const processGateway = await startTestGateway({
      modelRepositories: [EXAMPLES],
      loadModels: [],
      backendIsolation: "process",
    });
    try {
      const report = (await (await fetch(`${processGateway.httpUrl}/v2/operon/workers`)).json()) as {
        defaultIsolation?: string;
      };
      expect(report.defaultIsolation).toBe("process");
    } finally {
      await processGateway.stop();
    }
  });
});

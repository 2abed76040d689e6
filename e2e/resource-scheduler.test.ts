import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedIn, startControlPlaneServer } from "./support/control-plane-server.js";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "./support/operon-process.js";
import type { ApiSession } from "./support/api-client.js";

/**
 * The resource scheduler through the real server: `operon serve` with the
 * control plane, a one-second period and a conservative default capacity
 * (5 req/s per instance), so that a modest load is "a lot". Two copies of
 * add_sub with one instance each: `hot` gets the load, `idle` none.
 * Memory budget 1 GiB at 256 MiB per (thread) instance, full from the
 * start (the harness's add_sub with 2 instances, hot, idle): `hot` can only
 * grow to 4 by unloading the idle models, least recently used first
 * (add_sub, then idle: never used, by name), which load again on demand.
 */
function twoModelRepository(): string {
  const root = mkdtempSync(join(tmpdir(), "operon-rsched-repo-"));
  for (const name of ["hot", "idle"]) {
    cpSync(join(EXAMPLE_REPOSITORY, "add_sub"), join(root, name), { recursive: true });
    const configPath = join(root, name, "config.pbtxt");
    const config = readFileSync(configPath, "utf8")
      .replace('name: "add_sub"', `name: "${name}"`)
      .replace("count: 2", "count: 1");
    writeFileSync(configPath, config);
  }
  return root;
}

const INFER_BODY = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

function infer(server: RunningOperon, model: string): Promise<Response> {
  return fetch(`${server.httpUrl}/v2/models/${model}/infer`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: INFER_BODY,
  });
}

async function instancesOf(server: RunningOperon, model: string): Promise<number> {
  const body = (await (await fetch(`${server.httpUrl}/v2/operon/workers`)).json()) as {
    workers: Array<{ model: string; state: string }>;
  };
  return body.workers.filter((worker) => worker.model === model && worker.state === "READY").length;
}

async function parked(server: RunningOperon): Promise<string[]> {
  return ((await (await fetch(`${server.httpUrl}/v2/operon/parked`)).json()) as { models: string[] }).models;
}

async function waitFor<T>(
  what: string,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await probe();
  while (!done(last)) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    last = await probe();
  }
  return last;
}

/** `loops` clients, each sending a request every `gapMs`; counts answers by status until stopped. */
function startLoad(
  server: RunningOperon,
  model: string,
  loops: number,
  gapMs: number,
): { stop: () => Promise<Map<number, number>> } {
  const statuses = new Map<number, number>();
  let running = true;
  const clients = Array.from({ length: loops }, async () => {
    while (running) {
      const response = await infer(server, model);
      await response.arrayBuffer();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(clients);
      return statuses;
    },
  };
}

describe("resource scheduler: instances from demand", () => {
  let server: RunningOperon;
  let admin: ApiSession;

  beforeAll(async () => {
    server = await startControlPlaneServer([
      "--model-repository",
      twoModelRepository(),
      "--load-model",
      "hot",
      "--load-model",
      "idle",
      "--scheduler-period-secs",
      "1",
      "--scheduler-cooldown-secs",
      "2",
      "--scheduler-idle-unload-secs",
      "0",
      "--scheduler-default-capacity-rps",
      "5",
      "--scheduler-cpu-slots",
      "8",
      "--scheduler-memory-budget-bytes",
      String(1024 * 1024 * 1024),
      "--max-instances-per-model",
      "4",
    ]);
    admin = await signedIn(server);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("load raises the instance count within a few periods (unloading the idle model for memory), without a failed request; stopping it brings the count back down", async () => {
    expect(await instancesOf(server, "hot")).toBe(1);
    const load = startLoad(server, "hot", 6, 50); // ~60 req/s wanted: far over 1 × 5 req/s
    let statuses: Map<number, number>;
    try {
      const started = Date.now();
      const grown = await waitFor(
        "hot to scale up",
        () => instancesOf(server, "hot"),
        (count) => count >= 4,
        20_000,
      );
      const timeToScaleMs = Date.now() - started;
      expect(grown).toBe(4);
      expect(timeToScaleMs).toBeLessThan(20_000);
      expect(await parked(server)).toEqual(["add_sub", "idle"]);
      // Keep the load a while on the grown pool, then stop it: no request was dropped by the resize.
      await new Promise((resolve) => setTimeout(resolve, 1000));
    } finally {
      statuses = await load.stop();
    }
    expect([...statuses.keys()]).toEqual([200]);

    // Down in steps (4 -> 2 -> 1), each a cooldown after the last peak.
    await waitFor(
      "hot to scale back down",
      () => instancesOf(server, "hot"),
      (count) => count === 1,
      30_000,
    );

    const { decisions } = await admin.client.scheduler.decisions.query({ model: "hot" });
    const actions = decisions.map((decision) => decision.action);
    expect(actions).toContain("SCALE_UP");
    expect(actions).toContain("SCALE_DOWN");
    const up = decisions.find((decision) => decision.action === "SCALE_UP")!;
    expect(up).toMatchObject({ fromCount: 1, toCount: 4, capacitySource: "default", capacityRps: 5, applied: true });
    expect(up.reason).toMatch(/demand [\d.]+ req\/s \+ 25 % headroom needs/);
    const unload = (await admin.client.scheduler.decisions.query({ model: "idle" })).decisions.find(
      (decision) => decision.action === "UNLOAD",
    )!;
    expect(unload.reason).toMatch(/least recently used idle model/);
  }, 90_000);

  it("an unloaded model loads again on its next request (the request waits), and the scheduler records the load", async () => {
    expect(await parked(server)).toEqual(["add_sub", "idle"]);
    const response = await infer(server, "idle");
    expect(response.status).toBe(200);
    expect(await parked(server)).toEqual(["add_sub"]);
    await waitFor(
      "the LOAD decision",
      async () =>
        (await admin.client.scheduler.decisions.query({ model: "idle" })).decisions.map((decision) => decision.action),
      (actions) => actions.includes("LOAD"),
      10_000,
    );
  }, 60_000);

  it("every decision is in the audit log", async () => {
    const audit = await admin.client.audit.list.query({ action: "scheduler.", limit: 200 });
    const actions = new Set(audit.events.map((event: { action: string }) => event.action));
    expect(actions).toContain("scheduler.scaleUp");
    expect(actions).toContain("scheduler.unload");
  });

  it("a pin holds the count whatever the demand; off stops all changes", async () => {
    await admin.client.scheduler.pin.mutate({ model: "hot", count: 2 });
    await waitFor(
      "hot pinned at 2",
      () => instancesOf(server, "hot"),
      (count) => count === 2,
      15_000,
    );
    await admin.client.scheduler.unpin.mutate({ model: "hot" });
    await admin.client.scheduler.setEnabled.mutate({ enabled: false });
    expect((await admin.client.scheduler.status.query()).enabled).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 4000)); // past the cooldown: on, it would go back to 1
    expect(await instancesOf(server, "hot")).toBe(2);
    await admin.client.scheduler.setEnabled.mutate({ enabled: true });
  }, 60_000);
});

describe("gateway levers without the control plane", () => {
  let gateway: RunningOperon;

  beforeAll(async () => {
    gateway = await startOperon([
      "--model-repository",
      twoModelRepository(),
      "--model-control-mode",
      "explicit",
      "--load-model",
      "hot",
      "--load-model",
      "idle",
      "--parked-model-policy",
      "retry-after",
      "--max-instances-per-model",
      "3",
    ]);
  }, 60_000);

  afterAll(async () => {
    await gateway?.stop();
  });

  const post = (path: string, body: unknown): Promise<Response> =>
    fetch(`${gateway.httpUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("rescales a model in place and refuses counts past --max-instances-per-model", async () => {
    const grown = await post("/v2/operon/models/hot/instances", { count: 3 });
    expect(grown.status).toBe(200);
    expect(await grown.json()).toEqual({ model: "hot", from: 1, to: 3, kind: "KIND_CPU" });
    expect(await instancesOf(gateway, "hot")).toBe(3);
    const config = (await (await fetch(`${gateway.httpUrl}/v2/models/hot/config`)).json()) as {
      instance_group: Array<{ count: number }>;
    };
    expect(config.instance_group[0]!.count).toBe(3);
    const tooMany = await post("/v2/operon/models/hot/instances", { count: 4 });
    expect(tooMany.status).toBe(400);
    expect(((await tooMany.json()) as { error: string }).error).toContain("--max-instances-per-model");
    const bad = await post("/v2/operon/models/hot/instances", { count: "two" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain("'count' must be an integer");
    expect((await post("/v2/operon/models/hot/instances", { count: 1 })).status).toBe(200);
    expect(await instancesOf(gateway, "hot")).toBe(1);
    expect((await infer(gateway, "hot")).status).toBe(200);
  }, 60_000);

  it("with --parked-model-policy retry-after, a parked model answers 503 + Retry-After and loads in the background", async () => {
    expect((await post("/v2/operon/models/idle/park", {})).status).toBe(200);
    const refused = await infer(gateway, "idle");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(((await refused.json()) as { error: string }).error).toContain("unloaded by the resource scheduler");
    const served = await waitFor(
      "idle to load again",
      async () => (await infer(gateway, "idle")).status,
      (status) => status === 200,
      30_000,
    );
    expect(served).toBe(200);
  }, 60_000);
});

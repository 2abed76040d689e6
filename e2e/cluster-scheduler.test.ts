import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedIn } from "./support/control-plane-server.js";
import type { RunningOperon } from "./support/operon-process.js";
import { sql, startTestCluster, type TestCluster } from "./support/test-cluster.js";

// Issue 23: the resource scheduler's inputs per gateway and summed, and its decisions as a gateway replica count.
// One control plane (a decision every second, 2 req/s per instance assumed, 2 instance slots per gateway) and two
// gateways on one PostgreSQL; traffic goes to the gateways only, as a Kubernetes Service sends it. The scheduler
// reads both with the internal key, shows each one's rate and their sum on its status (the Scheduler page), stores a
// desired replica count sized for the sum, and the control plane's metrics endpoint exports it as a gauge. The
// workers page counts each gateway's instances and sums them.

const ADD_SUB_BODY = JSON.stringify({
  inputs: [
    { name: "INPUT0", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: "INPUT1", datatype: "FP32", shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

const sleep = (ms: number): Promise<void> => new Promise((resolveWait) => setTimeout(resolveWait, ms));

/** One client per gateway, a request every `gapMs`, until stopped; resolves with the statuses it saw. */
function load(gateway: RunningOperon, key: string, gapMs: number): { stop: () => Promise<number[]> } {
  let running = true;
  const statuses: number[] = [];
  const loop = (async () => {
    while (running) {
      const response = await fetch(`${gateway.httpUrl}/v2/models/add_sub/infer`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: ADD_SUB_BODY,
      });
      await response.arrayBuffer();
      statuses.push(response.status);
      await sleep(gapMs);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return statuses;
    },
  };
}

/** The gauge's value on a Prometheus text endpoint; undefined when absent. */
async function gauge(metricsUrl: string, name: string): Promise<number | undefined> {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split("\n").find((entry) => entry.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe("the resource scheduler over a cluster: inputs per gateway and summed, a desired gateway replica count", () => {
  let cluster: TestCluster | undefined;

  beforeAll(async () => {
    cluster = await startTestCluster({
      prefix: "operon_rsched",
      controlPlaneArgs: [
        ...["--scheduler-period-secs", "1", "--scheduler-default-capacity-rps", "2"],
        ...["--scheduler-cpu-slots", "2", "--scheduler-max-gateways", "6"],
      ],
    });
  }, 300_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);

  it("sums both gateways' traffic, decides more than one gateway for it, stores the count and exports it", async () => {
    const { controlPlane, gateways, url } = cluster!;
    const session = await signedIn(controlPlane);
    const { key } = await session.client.apiKeys.create.mutate({ name: "load", scopes: ["infer"] });
    const hosts = gateways.map((gateway) => `${hostname()}:${new URL(gateway.httpUrl).port}`);
    // The key reaches both gateways within a second.
    await sleep(1500);
    const loads = gateways.map((gateway) => load(gateway, key, 100));
    let status: Awaited<ReturnType<typeof session.client.scheduler.status.query>>;
    try {
      // Both gateways show traffic in one period, and a count is decided from their sum.
      const deadline = Date.now() + 40_000;
      for (;;) {
        status = await session.client.scheduler.status.query();
        const rates = hosts.map(
          (host) => status.cluster?.gateways.find((gateway) => gateway.gatewayHost === host)?.requestsPerSecond ?? 0,
        );
        if (rates.every((rate) => rate > 1) && (status.replicas?.desired ?? 0) >= 2) break;
        if (Date.now() > deadline)
          throw new Error(
            `no summed decision within 40 s: ${JSON.stringify({ cluster: status.cluster, replicas: status.replicas })}\n` +
              controlPlane.output().slice(-3000),
          );
        await sleep(500);
      }
    } finally {
      const statuses = (await Promise.all(loads.map((entry) => entry.stop()))).flat();
      expect(statuses.filter((code) => code !== 200)).toEqual([]);
    }
    // The inputs per gateway (the control plane's own gateway too, without traffic) and their sum.
    const cluster_ = status.cluster!;
    expect(cluster_.gateways.map((gateway) => gateway.gatewayHost).sort()).toEqual([...hosts, null].sort());
    const sum = cluster_.gateways.reduce((total, gateway) => total + gateway.requestsPerSecond, 0);
    expect(cluster_.summed.requestsPerSecond).toBeCloseTo(sum, 6);
    expect(cluster_.gateways.find((gateway) => gateway.gatewayHost === null)?.requestsPerSecond).toBe(0);
    // More than one gateway's worth: at 2 req/s per instance and 2 slots per gateway, a gateway serves 3.2 req/s.
    expect(status.replicas!.reason).toMatch(/add_sub needs \d+ instances for [\d.]+ req\/s/);
    expect(status.replicas).toMatchObject({ minGateways: 1, maxGateways: 6 });

    // Stored, so a restarted control plane keeps it, with the inputs it came from.
    const [row] = await sql<{ desired: number; inputs: { summed: { requestsPerSecond: number } } }>(
      url,
      `SELECT "desired", "inputs" FROM "GatewayReplicas" WHERE "id" = 'default'`,
    );
    expect(row!.desired).toBeGreaterThanOrEqual(2);
    expect(row!.inputs.summed.requestsPerSecond).toBeGreaterThan(2);
    // Exported where Prometheus scrapes the control plane (its metrics port), the value an HPA follows.
    const exported = await gauge(controlPlane.metricsUrl, "operon_desired_gateway_replicas");
    const [now] = await sql<{ desired: number }>(url, `SELECT "desired" FROM "GatewayReplicas"`);
    expect(exported).toBe(now!.desired);
    // The gateways do not export it: only the control plane decides.
    expect(await gauge(gateways[0]!.metricsUrl, "operon_desired_gateway_replicas")).toBeUndefined();
  }, 120_000);

  it("the workers page counts each gateway's instances (read with the internal key) and sums them with its own", async () => {
    const { controlPlane, gateways } = cluster!;
    const session = await signedIn(controlPlane);
    const list = await session.client.workers.list.query();
    const ports = gateways.map((gateway) => Number(new URL(gateway.httpUrl).port)).sort();
    expect(list.gateways.map((gateway) => gateway.httpPort).sort()).toEqual(ports);
    for (const gateway of list.gateways) expect(gateway.instances?.instances).toBeGreaterThan(0);
    const others = list.gateways.reduce((sum, gateway) => sum + gateway.instances!.instances, 0);
    expect(list.summed.instances).toBe(list.workers.length + others);
  }, 30_000);
});

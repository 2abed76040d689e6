import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { Logger } from "@operon/protocol/logger";
import { GatewayClient } from "../gateway/gateway-client.js";
import { GatewayLanes, type DiscoveredGateway } from "./gateway-lanes.js";

// Gateways as the lanes see them: metadata of the target (200 with the job's key, 401 without), and
// online_latency with no traffic. Real HTTP servers, so "away" is a closed port, as with a killed gateway.
const KEY = "opk_job_key";
const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} } as unknown as Logger;

describe("GatewayLanes", () => {
  const servers: Server[] = [];
  const lanes: GatewayLanes[] = [];
  afterEach(async () => {
    for (const lane of lanes.splice(0)) await lane.stop();
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  async function fakeGateway(accepts: () => boolean = () => true): Promise<DiscoveredGateway & { server: Server }> {
    const server = createServer((req, res) => {
      if (req.headers.authorization !== `Bearer ${KEY}` || !accepts()) {
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "unknown key" }));
        return;
      }
      if (req.url?.includes("online_latency"))
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ online_latency: [] }));
      else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ name: "m" }));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const httpUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return {
      id: `host:${(server.address() as AddressInfo).port}`,
      httpUrl,
      reader: new GatewayClient({ httpUrl, adminKey: KEY }),
      server,
    };
  }

  async function start(discover: () => Promise<DiscoveredGateway[]>, settleMs = 300): Promise<GatewayLanes> {
    const started = await GatewayLanes.start(
      {
        discover,
        target: { name: "m" },
        jobKey: KEY,
        limiter: { budgetMs: 1000, initial: 2 },
        logger: silent,
        jobId: "j",
        windowMs: 20,
        refreshMs: 100,
      },
      { settleMs, startTimeoutMs: 1_000 },
    );
    lanes.push(started);
    return started;
  }

  it("opens a lane per gateway that accepts the job's key, each with a limit of its own", async () => {
    const [a, b] = await Promise.all([fakeGateway(), fakeGateway()]);
    const pool = await start(async () => [a, b]);
    expect(
      pool
        .list()
        .map((lane) => lane.id)
        .sort(),
    ).toEqual([a.id, b.id].sort());
    // Each lane starts with a probe of online latency (no rows), then has a limit of its own.
    await expect.poll(() => pool.list().every((lane) => lane.limiter.limit > 0), { timeout: 2_000 }).toBe(true);
    // Slots go to the lane with the most free (synchronously: no window decides in between), up to the sum.
    const taken = Array.from({ length: pool.limit }, () => pool.acquire()?.id);
    expect(new Set(taken)).toEqual(new Set([a.id, b.id]));
    for (const lane of pool.list()) expect(taken.filter((id) => id === lane.id)).toHaveLength(lane.limiter.limit);
    expect(pool.acquire()).toBeUndefined();
  });

  it("leaves out a gateway that refuses the key until it accepts it, and refuses to start with none", async () => {
    let ready = false;
    const [a, late] = await Promise.all([fakeGateway(), fakeGateway(() => ready)]);
    const pool = await start(async () => [a, late]);
    expect(pool.list().map((lane) => lane.id)).toEqual([a.id]);
    ready = true;
    await expect.poll(() => pool.list().length, { timeout: 2_000 }).toBe(2);
    const refusing = await fakeGateway(() => false);
    await expect(start(async () => [refusing])).rejects.toMatchObject({ code: "GATEWAY_UNAVAILABLE" });
  });

  it("takes no rows to a gateway marked away, and drops one that left the cluster", async () => {
    const [a, b] = await Promise.all([fakeGateway(), fakeGateway()]);
    let listed = [a, b];
    const pool = await start(async () => listed);
    const laneB = pool.list().find((lane) => lane.id === b.id)!;
    // b dies: its port closes, the runner marks it away; its slots are not offered, a's are.
    b.server.closeAllConnections();
    await new Promise((resolve) => b.server.close(resolve));
    servers.splice(servers.indexOf(b.server), 1);
    await expect.poll(() => pool.list().every((lane) => lane.limiter.limit > 0), { timeout: 2_000 }).toBe(true);
    pool.markAway(laneB, "is not reachable");
    const taken = Array.from({ length: 10 }, () => pool.acquire()?.id).filter(Boolean);
    expect(new Set(taken)).toEqual(new Set([a.id]));
    expect(pool.limit).toBe(pool.list().find((lane) => lane.id === a.id)!.limiter.limit);
    // It leaves the session list: its lane goes.
    listed = [a];
    await expect.poll(() => pool.list().map((lane) => lane.id), { timeout: 2_000 }).toEqual([a.id]);
  });
});

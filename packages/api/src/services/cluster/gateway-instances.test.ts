import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { readGatewayInstances, summedInstances } from "./gateway-instances.js";

// A gateway's workers endpoint as the control plane asks it (admin-only: the internal key).
describe("a cluster gateway's instances", () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((resolveClose) => server.close(resolveClose));
    }
  });

  async function gateway(key: string): Promise<{ address: string; httpPort: number }> {
    const server = createServer((req, res) => {
      if (req.url !== "/v2/operon/workers") return void res.writeHead(404).end();
      if (req.headers.authorization !== `Bearer ${key}`) return void res.writeHead(401).end();
      const worker = (instance: string, rssBytes: number | null) => ({
        ...{ isolation: rssBytes === null ? "thread" : "process", pid: rssBytes === null ? null : 7, model: "m" },
        ...{ version: "1", instance, backend: "onnxruntime", kind: "CPU", device: null, state: "READY" },
        ...{ restarts: 0, inFlight: 0, startedAt: null, cpuSeconds: null, rssBytes },
      });
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          workers: [worker("m_0", 100), worker("m_1", 50), worker("m_2", null)],
          hostCpuCores: 2,
          gateway: { pid: 1, cpuSeconds: 0, rssBytes: 0 },
          gpus: [],
        }),
      );
    });
    servers.push(server);
    await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
    return { address: "127.0.0.1", httpPort: (server.address() as AddressInfo).port };
  }

  it("counts its instances and the memory of those with a process, with the internal key", async () => {
    const at = await gateway("opk_internal");
    expect(await readGatewayInstances(at, "opk_internal")).toEqual({ instances: 3, rssBytes: 150 });
  });

  it("is unknown (null) when the gateway refuses the key, or has no address", async () => {
    const at = await gateway("opk_internal");
    expect(await readGatewayInstances(at, "opk_other")).toBeNull();
    expect(await readGatewayInstances({ address: null, httpPort: 8000 }, "opk_internal")).toBeNull();
  });

  it("sums the gateways it could ask", () => {
    expect(summedInstances([{ instances: 2, rssBytes: null }, null, { instances: 3, rssBytes: 10 }])).toEqual({
      instances: 5,
      rssBytes: 10,
    });
  });
});

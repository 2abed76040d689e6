import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { probeGatewayReadiness, readinessUrl } from "./gateway-readiness.js";

// The readiness endpoint as gateways answer it (http-routes.ts): status only, a note in a header.
describe("probeGatewayReadiness", () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((resolveClose) => server.close(resolveClose));
    }
  });

  async function gatewayAnswering(
    answer: (res: import("node:http").ServerResponse) => void,
  ): Promise<{ address: string; httpPort: number }> {
    const server = createServer((req, res) => {
      if (req.url !== "/v2/health/ready") {
        res.writeHead(404).end();
        return;
      }
      answer(res);
    });
    servers.push(server);
    await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
    return { address: "127.0.0.1", httpPort: (server.address() as AddressInfo).port };
  }

  it("reports a gateway that answers 200 as ready, with no detail", async () => {
    const gateway = await gatewayAnswering((res) => res.writeHead(200).end());
    expect(await probeGatewayReadiness(gateway)).toEqual({ state: "ready", detail: null });
  });

  it("passes on the gateway's readiness detail (it lost the database, still serving)", async () => {
    const detail = "shared state stale since 2026-12-05T18:00:00.000Z: not connected for change notifications";
    const gateway = await gatewayAnswering((res) => res.writeHead(200, { "Operon-Readiness-Detail": detail }).end());
    expect(await probeGatewayReadiness(gateway)).toEqual({ state: "ready", detail });
  });

  it("reports any other answer as not ready", async () => {
    const gateway = await gatewayAnswering((res) => res.writeHead(400).end());
    expect(await probeGatewayReadiness(gateway)).toEqual({ state: "not-ready", detail: null });
  });

  it("reports a gateway that does not answer within the limit as unreachable, naming where it asked", async () => {
    const gateway = await gatewayAnswering(() => undefined); // holds the request
    const readiness = await probeGatewayReadiness(gateway, 200);
    expect(readiness).toEqual({
      state: "unreachable",
      detail: `http://127.0.0.1:${gateway.httpPort}/v2/health/ready: no answer within 200 ms`,
    });
  });

  it("reports a closed port as unreachable with the connection's error", async () => {
    const gateway = await gatewayAnswering((res) => res.writeHead(200).end());
    const server = servers.pop()!;
    await new Promise((resolveClose) => server.close(resolveClose));
    const readiness = await probeGatewayReadiness(gateway);
    expect(readiness.state).toBe("unreachable");
    expect(readiness.detail).toMatch(/ECONNREFUSED/);
  });

  it("has no address to ask for a gateway on a Unix socket, and brackets IPv6 addresses", async () => {
    expect(await probeGatewayReadiness({ address: null, httpPort: 8000 })).toEqual({
      state: "unreachable",
      detail: "connected to the database over a Unix socket: no address to ask",
    });
    expect(readinessUrl({ address: "fd00::7", httpPort: 8000 })).toBe("http://[fd00::7]:8000/v2/health/ready");
  });
});

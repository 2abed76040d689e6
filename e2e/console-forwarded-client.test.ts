import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
// The console's own module (server.mjs uses it): who sent a request, through trusted proxies.
import { browserScheme, clientAddress, compileTrustedProxies } from "../apps/console/forwarded-client.mjs";

type Trust = ReturnType<typeof compileTrustedProxies>;

// A real HTTP server that answers with what the console would tell the API
// about each request; this test connects from 127.0.0.1 and so plays a proxy
// whose address is, or is not, in the trusted range.
const servers: ReturnType<typeof createServer>[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

async function seenBy(
  trustedProxies: string,
  headers: Record<string, string>,
): Promise<{ client: string; scheme: string }> {
  const trust: Trust = compileTrustedProxies(trustedProxies);
  const server = createServer((req: IncomingMessage, res) => {
    res.end(JSON.stringify({ client: clientAddress(req, trust), scheme: browserScheme(req, trust) }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const response = await fetch(`http://127.0.0.1:${port}/`, { headers });
  return (await response.json()) as { client: string; scheme: string };
}

describe("the console's client address behind --trusted-proxy ranges", () => {
  const forwarded = { "x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https" };

  it("believes X-Forwarded-For from a peer inside a trusted CIDR range", async () => {
    expect(await seenBy("10.0.0.0/8,127.0.0.0/8", forwarded)).toEqual({ client: "203.0.113.9", scheme: "https" });
  });

  it("ignores X-Forwarded-For from a peer outside every trusted range", async () => {
    expect(await seenBy("10.0.0.0/8,192.168.0.0/16", forwarded)).toEqual({ client: "127.0.0.1", scheme: "http" });
    expect(await seenBy("", forwarded)).toEqual({ client: "127.0.0.1", scheme: "http" });
  });

  it("skips every hop inside the range, so a chain of ingress pods still names the browser", async () => {
    const chain = { "x-forwarded-for": "198.51.100.4, 127.0.0.2, 127.0.0.3" };
    expect((await seenBy("127.0.0.0/8", chain)).client).toBe("198.51.100.4");
    // A browser that writes its own X-Forwarded-For in front gets the address the proxy saw, not its choice.
    const spoofed = { "x-forwarded-for": "10.9.9.9, 198.51.100.4" };
    expect((await seenBy("127.0.0.0/8", spoofed)).client).toBe("198.51.100.4");
  });

  it("refuses a malformed range when the console starts", () => {
    expect(() => compileTrustedProxies("10.0.0.0/33")).toThrow(/invalid range/);
  });
});

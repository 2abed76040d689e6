import { describe, expect, it } from "vitest";
import type { ApiServices } from "../services.js";
import { startApiServer } from "./api-server.js";

// Finding 12: on SIGTERM during upload.finish the client got "socket hang
// up" although the model was committed: the API closed every connection at
// once. stop() now lets requests in flight finish.

function slowServices(delayMs: number): ApiServices {
  return {
    options: { secureCookies: false },
    setup: { token: undefined },
    logger: { info: () => {}, warn: () => {}, error: () => {} },
    // The session lookup stands in for slow work (a commit, a gateway load).
    sessions: { resolve: () => new Promise((resolve) => setTimeout(() => resolve(null), delayMs)) },
  } as unknown as ApiServices;
}

describe("API server stop", () => {
  it("answers a request in flight before it closes", async () => {
    const api = await startApiServer(slowServices(800), { host: "127.0.0.1", port: 0 });
    const pending = fetch(`${api.url}/api/trpc/auth.session`, { headers: { cookie: "operon_session=some-session" } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stopping = api.stop();
    const response = await pending;
    expect(response.status).toBe(200);
    expect(((await response.json()) as { result: { data: { user: null } } }).result.data.user).toBeNull();
    await stopping;
    await expect(fetch(`${api.url}/api/health`)).rejects.toThrow();
  });

  it("gives up on requests that outlast the grace period", async () => {
    const api = await startApiServer(slowServices(5_000), { host: "127.0.0.1", port: 0 });
    const pending = fetch(`${api.url}/api/trpc/auth.session`, {
      headers: { cookie: "operon_session=some-session" },
    }).catch((error: Error) => error);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    await api.stop(300);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await pending).toBeInstanceOf(Error);
  });
});

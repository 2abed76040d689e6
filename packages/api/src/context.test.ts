import { Socket } from "node:net";
import { IncomingMessage, ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { createHttpContext, csrfTokenFor } from "./context.js";
import type { ApiServices } from "./services.js";

const secret = Buffer.alloc(32, 7);

function request(headers: Record<string, string>): { req: IncomingMessage; res: ServerResponse } {
  const req = new IncomingMessage(new Socket());
  Object.assign(req.headers, headers);
  return { req, res: new ServerResponse(req) };
}

const services = {
  options: { secureCookies: false },
  sessions: {
    resolve: async (token: string) =>
      token === "good-session"
        ? { sessionId: "s1", user: { id: "u1", email: "a@example.com", name: null, role: "ADMIN" } }
        : null,
  },
} as unknown as ApiServices;

describe("createHttpContext: CSRF and cookies", () => {
  it("accepts a signed-in mutation only with the session's own token", async () => {
    const token = csrfTokenFor(secret, "good-session");
    const ok = request({ cookie: `operon_session=good-session; operon_csrf=${token}`, "x-csrf-token": token });
    expect((await createHttpContext(services, ok.req, ok.res, { csrfSecret: secret })).csrfVerified).toBe(true);
    const planted = request({
      cookie: "operon_session=good-session; operon_csrf=planted-planted-planted",
      "x-csrf-token": "planted-planted-planted",
    });
    expect((await createHttpContext(services, planted.req, planted.res, { csrfSecret: secret })).csrfVerified).toBe(
      false,
    );
  });

  it("marks cookies Secure when the console's server vouches for an https browser, not when anyone else says so", async () => {
    const vouched = request({ "x-operon-proxy-token": "proxy-secret", "x-operon-forwarded-proto": "https" });
    await createHttpContext(services, vouched.req, vouched.res, { csrfSecret: secret, proxyToken: "proxy-secret" });
    expect(String(vouched.res.getHeader("set-cookie"))).toMatch(/Secure/);
    const claimed = request({ "x-operon-proxy-token": "a guess", "x-operon-forwarded-proto": "https" });
    await createHttpContext(services, claimed.req, claimed.res, { csrfSecret: secret, proxyToken: "proxy-secret" });
    expect(String(claimed.res.getHeader("set-cookie"))).not.toMatch(/Secure/);
  });
});

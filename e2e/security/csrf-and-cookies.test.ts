import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorOf } from "../support/api-client.js";
import { signedIn, startControlPlaneServer, TEST_ADMIN } from "../support/control-plane-server.js";
import type { RunningOperon } from "../support/operon-process.js";

// Finding 6: the CSRF token was any value the cookie and header agreed on
// (not bound to the session), so a token planted in the browser passed; and
// cookies were never Secure, even behind TLS.

describe("CSRF token bound to the session; Secure cookies", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startControlPlaneServer(["--secure-cookies"]);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("refuses a signed-in mutation whose CSRF cookie and header agree but are not the session's token", async () => {
    const session = await signedIn(server);
    const planted = "attacker-planted-token-0123456789";
    const response = await fetch(`${server.apiUrl}/api/trpc/apiKeys.create`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        cookie: `operon_session=${session.cookies.get("operon_session")}; operon_csrf=${planted}`,
        "x-csrf-token": planted,
      },
      body: JSON.stringify({ name: "forged", scopes: ["infer"] }),
    });
    expect(response.status).toBe(403);
    expect(await response.text()).toMatch(/CSRF/);
    // The answer carries the session's real token, so the console recovers on its own.
    expect(
      response.headers.getSetCookie().some((line) => line.startsWith("operon_csrf=") && !line.includes(planted)),
    ).toBe(true);
    // The console's own calls, echoing the token the API set at sign-in, work.
    const created = await session.client.apiKeys.create.mutate({ name: "real", scopes: ["infer"] });
    expect(created.key).toMatch(/^opk_/);
  });

  it("gives each session its own token: one session's token does not pass for another", async () => {
    const first = await signedIn(server);
    const second = await signedIn(server);
    expect(first.cookies.get("operon_csrf")).not.toBe(second.cookies.get("operon_csrf"));
    first.cookies.set("operon_csrf", second.cookies.get("operon_csrf")!);
    const refused = await apiErrorOf(first.client.apiKeys.create.mutate({ name: "crossed", scopes: ["infer"] }));
    expect(refused.appCode).toBe("CSRF_FAILED");
  });

  it("marks the session and CSRF cookies Secure with --secure-cookies", async () => {
    const health = await fetch(`${server.apiUrl}/api/health`);
    const csrf = /operon_csrf=([^;]+)/.exec(health.headers.getSetCookie().join("; "))![1]!;
    const response = await fetch(`${server.apiUrl}/api/trpc/auth.signIn`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: `operon_csrf=${csrf}`, "x-csrf-token": csrf },
      body: JSON.stringify(TEST_ADMIN),
    });
    expect(response.status).toBe(200);
    const lines = response.headers.getSetCookie();
    for (const name of ["operon_session", "operon_csrf"]) {
      const line = lines.find((l) => l.startsWith(`${name}=`));
      expect(line, name).toMatch(/;\s*Secure/i);
    }
  });
});

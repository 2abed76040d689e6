import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { csrfPair, startControlPlaneServer, TEST_ADMIN } from "../support/control-plane-server.js";
import type { RunningOperon } from "../support/operon-process.js";

// Finding 1: one tRPC batch of 100 sign-in guesses (the last one right) was
// checked in full and signed the attacker in, past the limit of 5 failures
// per account and 50 per address.

describe("sign-in rate limit against batching and concurrency", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startControlPlaneServer();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  async function signInRequest(
    path: string,
    body: unknown,
    csrf: { cookie: string; token: string },
  ): Promise<Response> {
    return fetch(`${server.apiUrl}/api/trpc/${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: csrf.cookie, "x-csrf-token": csrf.token },
      body: JSON.stringify(body),
    });
  }

  it("refuses a batch of 100 guesses with the right password last, and signs nobody in", async () => {
    const csrf = await csrfPair(server.apiUrl!);
    const guesses = Array.from({ length: 100 }, (_, i) => ({
      email: TEST_ADMIN.email,
      password: i === 99 ? TEST_ADMIN.password : `wrong-guess-${i}`,
    }));
    const body = Object.fromEntries(guesses.map((guess, i) => [String(i), guess]));
    const response = await signInRequest(`${guesses.map(() => "auth.signIn").join(",")}?batch=1`, body, csrf);
    expect(response.status).toBe(400);
    expect(response.headers.getSetCookie().some((line) => line.startsWith("operon_session="))).toBe(false);
    expect(await response.text()).toMatch(/at most 20 calls|must be sent on its own/);
  });

  it("refuses even a batch of two sign-ins, saying why", async () => {
    const csrf = await csrfPair(server.apiUrl!);
    const response = await signInRequest(
      "auth.signIn,auth.signIn?batch=1",
      {
        0: { email: TEST_ADMIN.email, password: "x-wrong" },
        1: { email: TEST_ADMIN.email, password: TEST_ADMIN.password },
      },
      csrf,
    );
    expect(response.status).toBe(400);
    const [first] = (await response.json()) as Array<{ error: { message: string } }>;
    expect(first!.error.message).toBe("auth.signIn checks a password and must be sent on its own, not in a batch");
    expect(response.headers.getSetCookie().some((line) => line.startsWith("operon_session="))).toBe(false);
  });

  it("counts concurrent guesses one by one: of 12 at once, 5 are checked and the rest refused with Retry-After", async () => {
    const csrf = await csrfPair(server.apiUrl!);
    const victim = "victim-concurrent@example.com";
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        signInRequest("auth.signIn", { email: victim, password: `wrong-guess-${i}` }, csrf),
      ),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses.filter((status) => status === 401)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(7);
    for (const response of responses.filter((r) => r.status === 429))
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiErrorOf } from "../support/api-client.js";
import { csrfPair, signedIn, startControlPlaneServer } from "../support/control-plane-server.js";
import type { RunningOperon } from "../support/operon-process.js";

// Issue 28, item 6: the sign-in limiter counted per (address, account), so 40 wrong guesses from
// 127.0.0.2–9 went unrefused and the 41st, from 127.0.0.10, signed in. And any password of 10
// characters was accepted, the account's own email or "1234567890" among them.

const VICTIM = { email: "victim.engineer@example.com", password: "a fine engineer passphrase" };

/** One sign-in call from a chosen loopback address (Linux routes all of 127/8 to lo). */
function signInFrom(
  apiUrl: string,
  localAddress: string,
  body: unknown,
  csrf: { cookie: string; token: string },
): Promise<{ status: number; text: string; retryAfter: string | undefined }> {
  const url = new URL(`${apiUrl}/api/trpc/auth.signIn`);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        localAddress,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(payload),
          cookie: csrf.cookie,
          "x-csrf-token": csrf.token,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, text, retryAfter: res.headers["retry-after"] as string | undefined }),
        );
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

describe("sign-in: a limit per account across addresses, and a password rule", () => {
  let server: RunningOperon;
  beforeAll(async () => {
    server = await startControlPlaneServer();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("locks the account after guesses from rotating addresses: the right password is refused while locked, and admins see the lock", async () => {
    const admin = await signedIn(server);
    await admin.client.users.create.mutate({ email: VICTIM.email, role: "ENGINEER", password: VICTIM.password });
    const csrf = await csrfPair(server.apiUrl!);
    const statuses: number[] = [];
    for (let i = 0; i < 40; i += 1) {
      const address = `127.0.0.${2 + Math.floor(i / 5)}`; // 5 guesses from each of 127.0.0.2–9: within each address's own limit
      statuses.push(
        (await signInFrom(server.apiUrl!, address, { email: VICTIM.email, password: `wrong-guess-${i}` }, csrf)).status,
      );
    }
    expect(statuses.slice(0, 20).every((status) => status === 401)).toBe(true);
    expect(statuses.slice(20).every((status) => status === 429)).toBe(true);

    const right = await signInFrom(server.apiUrl!, "127.0.0.10", VICTIM, csrf);
    expect(right.status).toBe(429);
    expect(right.text).toMatch(
      /too many failed sign-ins for this account from all addresses: it is locked; try again in \d+ s/,
    );
    expect(Number(right.retryAfter)).toBeGreaterThan(0);
    expect(right.text).not.toMatch(/"user"/);

    const { events } = await admin.client.audit.list.query({ action: "auth.accountLocked" });
    expect(events).toHaveLength(1);
    expect(events[0]!.after).toMatchObject({ email: VICTIM.email, failedSignIns: 20, knownAccount: true });
    expect(server.output()).toMatch(/account locked: too many failed sign-ins from all addresses/);
    // Other accounts sign in as before.
    expect(
      (
        await signInFrom(
          server.apiUrl!,
          "127.0.0.10",
          { email: "admin@example.com", password: "s3cret-admin-pass" },
          csrf,
        )
      ).status,
    ).toBe(200);
  });

  it("refuses passwords that are or start with the email or its name, and common ones, naming the rule", async () => {
    const admin = await signedIn(server);
    const create = (email: string, password: string) =>
      admin.client.users.create.mutate({ email, role: "VIEWER", password });
    expect(await apiErrorOf(create("dana.smith@example.com", "dana.smith@example.com"))).toMatchObject({
      appCode: "VALIDATION_FAILED",
      message: "the password is refused: must not be or start with the account's email",
    });
    expect((await apiErrorOf(create("dana.smith@example.com", "dana.smith-2026!"))).message).toBe(
      "the password is refused: must not be or start with the email's name ('dana.smith')",
    );
    expect((await apiErrorOf(create("dana.smith@example.com", "1234567890"))).message).toBe(
      "the password is refused: one of the most common passwords; choose another",
    );
    expect((await apiErrorOf(create("dana.smith@example.com", "Password123"))).message).toMatch(/most common/);
    // An admin's reset follows the same rule.
    const viewer = await create("dana.smith@example.com", "an uncommon passphrase");
    expect(
      (await apiErrorOf(admin.client.users.resetPassword.mutate({ id: viewer.id, password: "qwertyuiop" }))).message,
    ).toMatch(/most common/);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runOperon, tempRepository } from "../support/operon-process.js";
import { startOperonWithConsole, type RunningOperonWithConsole } from "./support/operon-with-console.js";

// Operon behind a reverse proxy: `--trusted-proxy` names the proxies whose
// X-Forwarded-For tells which browser a request came from. This test plays
// the proxy (it connects from loopback, which it declares trusted) and checks
// that the sign-in limit then counts per browser, and that a browser cannot
// choose its address by writing X-Forwarded-For itself.
const ADMIN = { email: "admin@example.com", password: "a long enough passphrase" };

/** One wrong sign-in through the console, as the proxy forwards it; returns the HTTP status. */
async function guess(consoleUrl: string, csrf: string, forwardedFor: string, email: string): Promise<number> {
  const response = await fetch(`${consoleUrl}/api/trpc/auth.signIn`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      cookie: `operon_csrf=${csrf}`,
      "x-csrf-token": csrf,
      "x-forwarded-for": forwardedFor,
    },
    body: JSON.stringify({ email, password: "not the password" }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe("console behind a trusted reverse proxy", () => {
  let operon: RunningOperonWithConsole | undefined;
  let csrf = "";

  beforeAll(async () => {
    operon = await startOperonWithConsole({
      admin: ADMIN,
      extraArgs: ["--trusted-proxy", "127.0.0.0/8", "--trusted-proxy", "::1/128"],
    });
    const first = await fetch(`${operon.consoleUrl}/api/trpc/auth.session`);
    csrf = /operon_csrf=([^;]+)/.exec(first.headers.getSetCookie().join("; "))![1]!;
  }, 240_000);

  afterAll(async () => {
    await operon?.stop();
  });

  it("counts each browser the proxy names on its own", async () => {
    // Six browsers, one wrong guess each at the same account: none is limited.
    const spread: number[] = [];
    for (let browser = 1; browser <= 6; browser++)
      spread.push(await guess(operon!.consoleUrl, csrf, `203.0.113.${browser}`, "shared@example.com"));
    expect(spread).toEqual([401, 401, 401, 401, 401, 401]);
    // One browser guessing six times is limited at the sixth.
    const one: number[] = [];
    for (let attempt = 1; attempt <= 6; attempt++)
      one.push(await guess(operon!.consoleUrl, csrf, "198.51.100.7", "target@example.com"));
    expect(one).toEqual([401, 401, 401, 401, 401, 429]);
  });

  it("takes the nearest address the proxy saw, not the ones a browser wrote in front of it", async () => {
    // The proxy appends the browser's real address (198.51.100.9); what the browser sent comes first and changes every time.
    const statuses: number[] = [];
    for (let attempt = 1; attempt <= 6; attempt++)
      statuses.push(await guess(operon!.consoleUrl, csrf, `10.0.0.${attempt}, 198.51.100.9`, "other@example.com"));
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  });

  it("refuses a --trusted-proxy that is not an IP address", async () => {
    const result = await runOperon([
      "serve",
      "--model-repository",
      tempRepository(),
      "--trusted-proxy",
      "proxy.example.com",
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/'proxy\.example\.com' is not an IP address or CIDR range/);
  });
});

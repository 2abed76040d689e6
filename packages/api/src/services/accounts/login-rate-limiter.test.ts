import { describe, expect, it } from "vitest";
import { AppError } from "../../app-error.js";
import { LoginRateLimiter } from "./login-rate-limiter.js";

describe("LoginRateLimiter", () => {
  it("counts concurrent attempts before any is checked: the sixth at one account is refused", async () => {
    const limiter = new LoginRateLimiter({ perAccount: 5, perAddress: 50, windowSecs: 60 });
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => limiter.reserve("10.0.0.1", "a@example.com")),
    );
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(5);
    const refused = results.find((result): result is PromiseRejectedResult => result.status === "rejected")!
      .reason as AppError;
    expect(refused.code).toBe("RATE_LIMITED");
    expect(refused.retryAfterSecs).toBeGreaterThan(0);
  });

  it("gives a right password its attempt back and forgives the account's failures", async () => {
    const limiter = new LoginRateLimiter({ perAccount: 2, perAddress: 3, windowSecs: 60 });
    await limiter.reserve("10.0.0.2", "b@example.com");
    await limiter.reserve("10.0.0.2", "b@example.com");
    await limiter.succeeded("10.0.0.2", "b@example.com");
    await limiter.reserve("10.0.0.2", "b@example.com");
    await limiter.reserve("10.0.0.2", "c@example.com");
    await expect(limiter.reserve("10.0.0.2", "d@example.com")).rejects.toMatchObject({ code: "RATE_LIMITED" });
  });
});

describe("LoginRateLimiter across addresses", () => {
  it("locks an email after its failures from all addresses together, and reports the lock once", async () => {
    const locks: Array<{ email: string; lockedForSecs: number }> = [];
    const limiter = new LoginRateLimiter(
      { perAccount: 5, perAddress: 50, perAccountAllAddresses: 20, windowSecs: 60 },
      (event) => locks.push(event),
    );
    for (let i = 0; i < 20; i += 1) await limiter.reserve(`127.0.0.${2 + Math.floor(i / 5)}`, "Victim@example.com");
    await expect(limiter.reserve("127.0.0.10", "victim@example.com")).rejects.toMatchObject({
      code: "RATE_LIMITED",
      message: expect.stringMatching(/locked/),
    });
    await expect(limiter.reserve("127.0.0.11", "victim@example.com")).rejects.toMatchObject({ code: "RATE_LIMITED" });
    expect(locks).toHaveLength(1);
    expect(locks[0]).toMatchObject({ email: "victim@example.com" });
    expect(locks[0]!.lockedForSecs).toBeGreaterThan(0);
    // Other accounts are not touched.
    await limiter.reserve("127.0.0.10", "other@example.com");
  });
});

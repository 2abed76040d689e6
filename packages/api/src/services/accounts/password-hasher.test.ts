import { describe, expect, it } from "vitest";
import { hashesRunning, hashPassword, MAX_CONCURRENT_HASHES, verifyPassword } from "./password-hasher.js";

describe("password hashing", () => {
  it(`runs at most ${MAX_CONCURRENT_HASHES} Argon2 computations at once, however many are asked for`, async () => {
    const stored = await hashPassword("correct horse battery");
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, hashesRunning())), 1);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => verifyPassword(stored, i === 11 ? "correct horse battery" : `guess ${i}`)),
    );
    clearInterval(sampler);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(MAX_CONCURRENT_HASHES);
    expect(hashesRunning()).toBe(0);
  });
});

import { describe, expect, it } from "vitest";
import { apiKeyPrefixOf, generateApiKey, hashApiKey } from "./api-keys.js";

describe("API keys", () => {
  it("generates distinct well-formed keys whose hash and prefix can be recomputed", () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a.key).not.toBe(b.key);
    expect(apiKeyPrefixOf(a.key)).toBe(a.prefix);
    expect(hashApiKey(a.key)).toBe(a.hash);
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("rejects malformed keys", () => {
    expect(apiKeyPrefixOf("opk_short_x")).toBeUndefined();
    expect(apiKeyPrefixOf("Bearer something")).toBeUndefined();
    expect(apiKeyPrefixOf(generateApiKey().key + "x")).toBeUndefined();
  });
});

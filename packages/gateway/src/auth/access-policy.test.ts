import { type ApiKeyGrant, type ApiKeyScope, generateApiKey, hashApiKey } from "@operon/protocol/api-keys";
import { OperonError } from "@operon/protocol/errors";
import { describe, expect, it } from "vitest";
import { GatewayAccessPolicy } from "./access-policy.js";
import { ApiKeyRing } from "./api-key-ring.js";
import { isLoopbackHost } from "./loopback.js";

interface Key {
  key: string;
  prefix: string;
  grant: ApiKeyGrant;
}

function makeKey(id: string, scopes: ApiKeyScope[], extra: Partial<ApiKeyGrant> = {}): Key {
  const { key, prefix, hash } = generateApiKey();
  return { key, prefix, grant: { id, hash, scopes, priorityLevel: 0, qpsQuota: null, expiresAt: null, ...extra } };
}

const inferKey = makeKey("infer-key", ["infer"], { priorityLevel: 2 });
const adminKey = makeKey("admin-key", ["admin"]);
const internalKey = makeKey("internal", ["infer", "admin"], { internal: true });
const bearer = (key: Key): string => `Bearer ${key.key}`;

function policy(
  options: { keys?: Key[]; requireApiKey?: boolean; loopbackOnly?: boolean; now?: () => number } = {},
): GatewayAccessPolicy {
  const ring = new ApiKeyRing(
    (options.keys ?? []).map((key) => key.grant),
    options.now !== undefined ? { now: options.now } : {},
  );
  return new GatewayAccessPolicy({
    ring,
    requireApiKey: options.requireApiKey ?? false,
    loopbackOnly: options.loopbackOnly ?? true,
  });
}

/** The kind and message authorize fails with. */
function failure(run: () => unknown): { kind: string; message: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof OperonError) return { kind: error.kind, message: error.message };
    throw error;
  }
  throw new Error("expected authorize to fail");
}

describe("GatewayAccessPolicy: inference", () => {
  it("lets anonymous inference through unless keys are required", () => {
    expect(policy().authorize(undefined, "infer")).toBeNull();
    expect(failure(() => policy({ requireApiKey: true }).authorize(undefined, "infer"))).toEqual({
      kind: "UNAUTHENTICATED",
      message: "inference on this server needs an API key (Authorization: Bearer <key>)",
    });
  });

  it("authorizes a valid key with its id and priority, naming it by prefix only", () => {
    const principal = policy({ keys: [inferKey], requireApiKey: true }).authorize(bearer(inferKey), "infer");
    expect(principal).toEqual({ keyId: "infer-key", priorityLevel: 2, label: `opk_${inferKey.prefix}…` });
  });

  it("accepts either scope for inference", () => {
    expect(policy({ keys: [adminKey], requireApiKey: true }).authorize(bearer(adminKey), "infer")?.keyId).toBe(
      "admin-key",
    );
  });

  it("checks a presented key even when none is required: a revoked key is refused", () => {
    const access = policy({ keys: [inferKey] });
    expect(access.authorize(bearer(inferKey), "infer")?.keyId).toBe("infer-key");
    access.ring.replaceAll([]);
    expect(failure(() => access.authorize(bearer(inferKey), "infer"))).toEqual({
      kind: "UNAUTHENTICATED",
      message: "the API key is not valid (unknown, revoked or expired)",
    });
  });

  it("refuses an expired key", () => {
    const expiring = makeKey("soon", ["infer"], { expiresAt: 5_000 });
    const clock = { now: 4_000 };
    const access = policy({ keys: [expiring], now: () => clock.now });
    expect(access.authorize(bearer(expiring), "infer")?.keyId).toBe("soon");
    clock.now = 5_000;
    expect(failure(() => access.authorize(bearer(expiring), "infer")).kind).toBe("UNAUTHENTICATED");
  });

  it.each(["Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "", "Bearer a b", "opk_abc"])(
    "refuses the malformed header %j",
    (header) => {
      expect(failure(() => policy({ keys: [inferKey] }).authorize(header, "infer"))).toEqual({
        kind: "UNAUTHENTICATED",
        message: "Authorization must be 'Bearer <api key>'",
      });
    },
  );

  it("takes the scheme in any case", () => {
    expect(policy({ keys: [inferKey] }).authorize(`bearer ${inferKey.key}`, "infer")?.keyId).toBe("infer-key");
  });

  it("refuses a key with no scope at all", () => {
    const none = makeKey("none", []);
    expect(failure(() => policy({ keys: [none] }).authorize(bearer(none), "infer")).kind).toBe("PERMISSION_DENIED");
  });
});

describe("GatewayAccessPolicy: model control", () => {
  it("is open on a loopback-only server without keys, or with only the internal key", () => {
    expect(policy().modelControlOpen()).toBe(true);
    expect(policy().authorize(undefined, "admin")).toBeNull();
    const withInternal = policy({ keys: [internalKey] });
    expect(withInternal.modelControlOpen()).toBe(true);
    expect(withInternal.authorize(undefined, "admin")).toBeNull();
  });

  it("checks a presented key's scope even where model control is open: an infer key cannot unload", () => {
    const ring = new ApiKeyRing([internalKey.grant]);
    const open = new GatewayAccessPolicy({
      ring,
      requireApiKey: false,
      loopbackOnly: true,
      anonymousModelControl: true,
    });
    ring.replaceAll([internalKey.grant, inferKey.grant]);
    expect(open.modelControlOpen()).toBe(true);
    expect(failure(() => open.authorize(bearer(inferKey), "admin")).kind).toBe("PERMISSION_DENIED");
  });

  it("locks for good once any user key was held: expiry, revocation or a restart told of past keys do not reopen it", () => {
    let now = 1_000;
    const expiring = makeKey("expiring-admin", ["admin"], { expiresAt: 2_000 });
    const ring = new ApiKeyRing([internalKey.grant], { now: () => now });
    const access = new GatewayAccessPolicy({ ring, requireApiKey: false, loopbackOnly: true });
    expect(access.modelControlOpen()).toBe(true);
    ring.replaceAll([internalKey.grant, expiring.grant]);
    expect(access.modelControlOpen()).toBe(false);
    now = 3_000;
    ring.replaceAll([internalKey.grant]); // the control plane dropped the expired key
    expect(access.modelControlOpen()).toBe(false);
    expect(failure(() => access.authorize(undefined, "admin")).kind).toBe("UNAUTHENTICATED");

    const restarted = new ApiKeyRing([internalKey.grant]);
    restarted.noteKeysEverIssued();
    expect(
      new GatewayAccessPolicy({ ring: restarted, requireApiKey: false, loopbackOnly: true }).modelControlOpen(),
    ).toBe(false);
    // Only the explicit flag reopens it on loopback.
    expect(
      new GatewayAccessPolicy({
        ring: restarted,
        requireApiKey: false,
        loopbackOnly: true,
        anonymousModelControl: true,
      }).modelControlOpen(),
    ).toBe(true);
    expect(
      new GatewayAccessPolicy({
        ring: restarted,
        requireApiKey: false,
        loopbackOnly: false,
        anonymousModelControl: true,
      }).modelControlOpen(),
    ).toBe(false);
  });

  it.each([
    ["keys are required", { requireApiKey: true }],
    ["a listener binds beyond loopback", { loopbackOnly: false }],
    ["the user made an admin key", { keys: [adminKey] }],
    ["the user made any key", { keys: [inferKey] }],
  ])("needs an admin key when %s", (_label, options) => {
    const access = policy(options);
    expect(access.modelControlOpen()).toBe(false);
    expect(failure(() => access.authorize(undefined, "admin"))).toEqual({
      kind: "UNAUTHENTICATED",
      message: "model control on this server needs an API key (Authorization: Bearer <key>)",
    });
  });

  it("refuses an infer key where an admin key is needed, and takes an admin key", () => {
    const access = policy({ keys: [inferKey, adminKey], loopbackOnly: false });
    expect(failure(() => access.authorize(bearer(inferKey), "admin"))).toEqual({
      kind: "PERMISSION_DENIED",
      message: "this API key lacks the 'admin' scope that model control needs",
    });
    expect(access.authorize(bearer(adminKey), "admin")?.keyId).toBe("admin-key");
  });

  it("keeps inference open when only model control is locked", () => {
    const access = policy({ keys: [adminKey], loopbackOnly: false });
    expect(access.authorize(undefined, "infer")).toBeNull();
  });

  it("lets the internal key do model control", () => {
    const access = policy({ keys: [internalKey, adminKey] });
    expect(access.authorize(bearer(internalKey), "admin")?.keyId).toBe("internal");
  });
});

describe("GatewayAccessPolicy: quota and use", () => {
  it("refuses requests over the key's quota, naming the key by prefix, until it refills", () => {
    const limited = makeKey("limited", ["infer"], { qpsQuota: 2 });
    const clock = { now: 0 };
    const access = policy({ keys: [limited], now: () => clock.now });
    access.authorize(bearer(limited), "infer");
    access.authorize(bearer(limited), "infer");
    const over = failure(() => access.authorize(bearer(limited), "infer"));
    expect(over).toEqual({
      kind: "RESOURCE_EXHAUSTED",
      message: `API key opk_${limited.prefix}… exceeded its quota of 2 requests/s`,
    });
    expect(over.message).not.toContain(limited.key);
    clock.now += 500;
    expect(access.authorize(bearer(limited), "infer")?.keyId).toBe("limited");
  });

  it("names the key by id when its token has no opk_ prefix", () => {
    const token = "custom-token-without-prefix";
    const custom: Key = {
      key: token,
      prefix: "",
      grant: {
        id: "custom",
        hash: hashApiKey(token),
        scopes: ["infer"],
        priorityLevel: 0,
        qpsQuota: 1,
        expiresAt: null,
      },
    };
    const access = policy({ keys: [custom] });
    access.authorize(bearer(custom), "infer");
    expect(failure(() => access.authorize(bearer(custom), "infer")).message).toBe(
      "API key id custom exceeded its quota of 1 requests/s",
    );
  });

  it("notes every authorized use of a key, and none of anonymous or refused requests", () => {
    const clock = { now: 42 };
    const access = policy({ keys: [inferKey, adminKey], loopbackOnly: false, now: () => clock.now });
    access.authorize(undefined, "infer");
    failure(() => access.authorize(bearer(inferKey), "admin"));
    access.authorize(bearer(adminKey), "admin");
    expect(access.ring.drainUsage()).toEqual(new Map([["admin-key", 42]]));
  });

  it("admit re-checks a stream's key per request: revoked mid-stream is refused", () => {
    const access = policy({ keys: [inferKey] });
    const principal = access.authenticate(bearer(inferKey), "infer")!;
    access.admit(principal);
    access.ring.replaceAll([]);
    expect(failure(() => access.admit(principal)).kind).toBe("UNAUTHENTICATED");
  });
});

describe("isLoopbackHost", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.1.2.3", true],
    ["::1", true],
    ["[::1]", true],
    ["localhost", true],
    ["LOCALHOST", true],
    ["::ffff:127.0.0.1", true],
    ["0.0.0.0", false],
    ["::", false],
    ["192.168.1.10", false],
    ["example.com", false],
    ["127.example.com", false],
  ])("%s → %s", (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });
});

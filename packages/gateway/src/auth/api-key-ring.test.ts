import { type ApiKeyGrant, generateApiKey, hashApiKey } from "@operon/protocol/api-keys";
import { describe, expect, it } from "vitest";
import { ApiKeyRing } from "./api-key-ring.js";

function grant(overrides: Partial<ApiKeyGrant> & { key?: string } = {}): ApiKeyGrant & { key: string } {
  const key = overrides.key ?? generateApiKey().key;
  return {
    id: "k1",
    hash: hashApiKey(key),
    scopes: ["infer"],
    priorityLevel: 0,
    qpsQuota: null,
    expiresAt: null,
    ...overrides,
    key,
  };
}

/** A ring on a clock the test moves. */
function ringAt(grants: ApiKeyGrant[], start = 1_000_000): { ring: ApiKeyRing; clock: { now: number } } {
  const clock = { now: start };
  return { ring: new ApiKeyRing(grants, { now: () => clock.now }), clock };
}

describe("ApiKeyRing lookup", () => {
  it("finds a grant by its key, and nothing for another key", () => {
    const one = grant();
    const { ring } = ringAt([one]);
    expect(ring.lookup(one.key)?.id).toBe("k1");
    expect(ring.lookup(generateApiKey().key)).toBeUndefined();
    expect(ring.lookup("")).toBeUndefined();
  });

  it("never matches an expired grant, from its expiry time on", () => {
    const one = grant({ expiresAt: 2_000 });
    const { ring, clock } = ringAt([one], 1_999);
    expect(ring.lookup(one.key)?.id).toBe("k1");
    clock.now = 2_000;
    expect(ring.lookup(one.key)).toBeUndefined();
    expect(ring.grantById("k1")).toBeUndefined();
  });

  it("replaceAll revokes keys left out and adds new ones", () => {
    const one = grant();
    const two = grant({ id: "k2" });
    const { ring } = ringAt([one]);
    ring.replaceAll([two]);
    expect(ring.lookup(one.key)).toBeUndefined();
    expect(ring.lookup(two.key)?.id).toBe("k2");
    expect(ring.size).toBe(1);
  });

  it("keeps its own copy: changing the caller's grant later changes nothing", () => {
    const one = grant();
    const { ring } = ringAt([one]);
    one.scopes.push("admin");
    expect(ring.lookup(one.key)?.scopes).toEqual(["infer"]);
  });

  it.each([
    ["an empty id", { id: "" }, "grant 0: id must be a non-empty string"],
    ["a hash that is not SHA-256 hex", { hash: "abc" }, "grant 0 ('k1'): hash must be the key's SHA-256"],
    ["an unknown scope", { scopes: ["root"] as never }, "scopes must be a list of 'infer', 'admin'"],
    ["a negative priority", { priorityLevel: -1 }, "priorityLevel must be an integer >= 0"],
    ["a zero quota", { qpsQuota: 0 }, "qpsQuota must be a number of requests per second > 0, or null"],
    ["a non-numeric expiry", { expiresAt: "tomorrow" as never }, "expiresAt must be epoch milliseconds or null"],
  ])("refuses a grant with %s, naming it, and keeps the previous set", (_label, overrides, message) => {
    const good = grant();
    const { ring } = ringAt([good]);
    expect(() => ring.replaceAll([grant({ id: "k1", ...overrides })])).toThrow(message);
    expect(ring.lookup(good.key)?.id).toBe("k1");
  });

  it("refuses two grants with one id", () => {
    const { ring } = ringAt([]);
    expect(() => ring.replaceAll([grant(), grant()])).toThrow("id 'k1' appears twice");
  });
});

describe("ApiKeyRing admin keys", () => {
  it("counts admin keys the user made, not the control plane's internal key", () => {
    const { ring } = ringAt([
      grant({ id: "internal", scopes: ["infer", "admin"], internal: true }),
      grant({ id: "user" }),
    ]);
    expect(ring.hasUserAdminKeys()).toBe(false);
    ring.replaceAll([grant({ id: "admin", scopes: ["admin"] })]);
    expect(ring.hasUserAdminKeys()).toBe(true);
  });

  it("still counts an expired user admin key (a lapsed key must not reopen model control)", () => {
    const { ring } = ringAt([grant({ scopes: ["admin"], expiresAt: 1 })]);
    expect(ring.hasUserAdminKeys()).toBe(true);
  });
});

describe("ApiKeyRing usage", () => {
  it("notes the last use per key and forgets what it drained", () => {
    const { ring, clock } = ringAt([grant(), grant({ id: "k2" })]);
    ring.recordUse("k1");
    clock.now += 50;
    ring.recordUse("k1");
    ring.recordUse("k2");
    expect(ring.drainUsage()).toEqual(
      new Map([
        ["k1", 1_000_050],
        ["k2", 1_000_050],
      ]),
    );
    expect(ring.drainUsage().size).toBe(0);
  });
});

describe("ApiKeyRing quota", () => {
  it("lets a burst of qpsQuota through, then refills at qpsQuota per second", () => {
    const limited = grant({ qpsQuota: 4 });
    const { ring, clock } = ringAt([limited]);
    const take = (): boolean => ring.takeQuota(ring.lookup(limited.key)!);
    expect([take(), take(), take(), take(), take()]).toEqual([true, true, true, true, false]);
    clock.now += 250; // a quarter second: one request's worth
    expect([take(), take()]).toEqual([true, false]);
    clock.now += 10_000; // never more than the capacity
    expect(Array.from({ length: 5 }, take)).toEqual([true, true, true, true, false]);
  });

  it("is unlimited with a null quota", () => {
    const free = grant();
    const { ring } = ringAt([free]);
    for (let i = 0; i < 1000; i += 1) expect(ring.takeQuota(free)).toBe(true);
  });

  it("lets a quota below one per second through once per period", () => {
    const slow = grant({ qpsQuota: 0.5 });
    const { ring, clock } = ringAt([slow]);
    expect([ring.takeQuota(slow), ring.takeQuota(slow)]).toEqual([true, false]);
    clock.now += 2_000;
    expect(ring.takeQuota(slow)).toBe(true);
  });

  it("keeps a key's bucket across replaceAll, so a refresh does not refill it", () => {
    const limited = grant({ qpsQuota: 1 });
    const { ring } = ringAt([limited]);
    expect(ring.takeQuota(limited)).toBe(true);
    ring.replaceAll([limited]);
    expect(ring.takeQuota(limited)).toBe(false);
  });

  it("buckets per key id", () => {
    const a = grant({ qpsQuota: 1 });
    const b = grant({ id: "k2", qpsQuota: 1 });
    const { ring } = ringAt([a, b]);
    expect([ring.takeQuota(a), ring.takeQuota(a), ring.takeQuota(b)]).toEqual([true, false, true]);
  });
});

describe("ApiKeyRing tenants", () => {
  it("tells its listener the tenants the grants name, once each, and none when no grant has one", () => {
    const seen: string[][] = [];
    const { ring } = ringAt([]);
    ring.onTenants((tenants) => seen.push(tenants.map((tenant) => `${tenant.id}:${tenant.share}:${tenant.policy}`)));
    ring.replaceAll([
      grant({ id: "k1", tenant: { id: "team-a", share: 2, policy: "queue" } }),
      grant({ id: "k2", tenant: { id: "team-a", share: 2, policy: "queue" } }),
      grant({ id: "k3", tenant: { id: "user:u1", share: 1, policy: "refuse" } }),
    ]);
    ring.replaceAll([grant({ id: "k1" })]);
    expect(seen).toEqual([[], ["team-a:2:queue", "user:u1:1:refuse"], []]);
  });

  it("refuses malformed tenants, and one tenant with two shares, keeping the previous set", () => {
    const kept = grant({ id: "kept" });
    const { ring } = ringAt([kept]);
    const bad = (tenant: unknown) => () =>
      ring.replaceAll([grant({ id: "k1", tenant: tenant as ApiKeyGrant["tenant"] })]);
    expect(bad({ id: "", share: 1, policy: "queue" })).toThrow(/tenant\.id must be a non-empty string/);
    expect(bad({ id: "t", share: 0, policy: "queue" })).toThrow(/tenant\.share must be a number > 0/);
    expect(bad({ id: "t", share: Number.NaN, policy: "queue" })).toThrow(/tenant\.share/);
    expect(bad({ id: "t", share: 1, policy: "drop" })).toThrow(/tenant\.policy must be one of 'queue', 'refuse'/);
    expect(() =>
      ring.replaceAll([
        grant({ id: "k1", tenant: { id: "t", share: 1, policy: "queue" } }),
        grant({ id: "k2", tenant: { id: "t", share: 3, policy: "queue" } }),
      ]),
    ).toThrow(/tenant 't' has another share or policy/);
    expect(ring.lookup(kept.key)?.id).toBe("kept");
  });
});

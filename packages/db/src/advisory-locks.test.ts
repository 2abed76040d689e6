import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdvisoryLockTimeoutError, postgresAdvisoryLocks, type AdvisoryLocks } from "./advisory-locks.js";
import { createTestPostgresDatabase } from "./testing/test-databases.js";

// What the KeyedLock tests in @operon/api do not reach: the wait limit and bad options.
describe("advisory locks on PostgreSQL", () => {
  let database: { url: string; drop(): Promise<void> };
  const opened: AdvisoryLocks[] = [];
  const open = (waitTimeoutMs: number): AdvisoryLocks => {
    const locks = postgresAdvisoryLocks({ url: database.url, waitTimeoutMs });
    opened.push(locks);
    return locks;
  };

  beforeAll(async () => {
    database = await createTestPostgresDatabase();
  });
  afterAll(async () => {
    for (const locks of opened) await locks.close();
    await database?.drop();
  });

  it("fails a wait longer than the limit with an error naming the key, and the waiter can try again later", async () => {
    const holder = open(5000);
    const waiter = open(200);
    let release = (): void => undefined;
    const released = new Promise<void>((resolveRelease) => (release = resolveRelease));
    let held = (): void => undefined;
    const isHeld = new Promise<void>((resolveHeld) => (held = resolveHeld));
    const holding = holder.withLock("operon:model:slow", async () => {
      held();
      await released;
    });
    await isHeld;
    const refused = waiter.withLock("operon:model:slow", async () => "ran");
    await expect(refused).rejects.toBeInstanceOf(AdvisoryLockTimeoutError);
    await expect(refused).rejects.toThrow(/waited 0 s for the lock on "operon:model:slow", which another process/);
    release();
    await holding;
    await expect(waiter.withLock("operon:model:slow", async () => "ran")).resolves.toBe("ran");
  });

  it("refuses a wait limit that is not a positive whole number", () => {
    expect(() => postgresAdvisoryLocks({ url: database.url, waitTimeoutMs: 0 })).toThrow(
      "waitTimeoutMs must be a positive whole number of milliseconds, got 0",
    );
    expect(() => postgresAdvisoryLocks({ url: database.url, waitTimeoutMs: 1.5 })).toThrow(
      "waitTimeoutMs must be a positive whole number of milliseconds, got 1.5",
    );
  });

  it("holds many locks at once, each as long as its work runs (no pool slot to wait for)", async () => {
    const locks = open(5000);
    let inside = 0;
    let all = (): void => undefined;
    const allInside = new Promise<void>((resolveAll) => (all = resolveAll));
    const keys = Array.from({ length: 12 }, (_, n) => `operon:model:m${n}`);
    await Promise.all(
      keys.map((key) =>
        locks.withLock(key, async () => {
          inside += 1;
          if (inside === keys.length) all();
          await allInside; // never resolves if one key waited for a connection another holds
        }),
      ),
    );
  });

  it("names the database's error when the lock cannot be taken", async () => {
    const unreachable = postgresAdvisoryLocks({ url: "postgresql://postgres@127.0.0.1:1/none" });
    opened.push(unreachable);
    await expect(unreachable.withLock("operon:model:x", async () => 1)).rejects.toThrow(
      /^could not take the lock on "operon:model:x": connect ECONNREFUSED 127\.0\.0\.1:1/,
    );
  });

  it("waits in close() for the locks held then", async () => {
    const locks = postgresAdvisoryLocks({ url: database.url });
    let finished = false;
    let held = (): void => undefined;
    const isHeld = new Promise<void>((resolveHeld) => (held = resolveHeld));
    const running = locks.withLock("operon:model:closing", async () => {
      held();
      await new Promise((resolveWait) => setTimeout(resolveWait, 200));
      finished = true;
    });
    await isHeld;
    await locks.close();
    expect(finished).toBe(true);
    await running;
  });

  it("refuses new locks once closed", async () => {
    const locks = postgresAdvisoryLocks({ url: database.url });
    await locks.close();
    await locks.close(); // idempotent
    await expect(locks.withLock("k", async () => 1)).rejects.toThrow(
      'cannot take the lock on "k": the database\'s locks are closed',
    );
  });
});

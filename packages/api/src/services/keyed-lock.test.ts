import { AdvisoryLockTimeoutError, openDatabase, type AdvisoryLocks, type Database } from "@operon/db";
import { createTestPostgresDatabase, testDatabaseBackends } from "@operon/db/testing/test-databases";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AppError } from "../app-error.js";
import { KeyedLock } from "./keyed-lock.js";

const sleep = (ms: number): Promise<void> => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

/** Counts how many works are inside at once; `maxInside` above 1 means two overlapped. */
function overlapProbe(): { work(ms: number): () => Promise<void>; maxInside: () => number; inside: () => number } {
  let inside = 0;
  let maxInside = 0;
  return {
    work: (ms) => async () => {
      inside += 1;
      maxInside = Math.max(maxInside, inside);
      await sleep(ms);
      inside -= 1;
    },
    maxInside: () => maxInside,
    inside: () => inside,
  };
}

/** A promise and its resolver: a work that waits for the test to let it go. */
function gate(): { opened: Promise<void>; open(): void } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolveGate) => (open = resolveGate));
  return { opened, open };
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

// Within one process, on either database: the in-process queue alone orders the work.
describe.each(testDatabaseBackends())("KeyedLock in one process on $name", (backend) => {
  let db: Database;
  beforeAll(async () => {
    db = await backend.setup();
  });
  afterAll(async () => {
    await db?.close();
    await backend.teardown();
  });

  it("runs the works of one key one at a time, in call order", async () => {
    const lock = new KeyedLock(db.locks, "model");
    const probe = overlapProbe();
    const order: number[] = [];
    await Promise.all(
      [0, 1, 2, 3].map((n) =>
        lock.run("resnet", async () => {
          await probe.work(30)();
          order.push(n);
        }),
      ),
    );
    expect(probe.maxInside()).toBe(1);
    expect(order).toEqual([0, 1, 2, 3]);
  });

  it("runs the works of different keys at the same time", async () => {
    const lock = new KeyedLock(db.locks, "model");
    const both = gate();
    let entered = 0;
    const work = async (): Promise<void> => {
      entered += 1;
      if (entered === 2) both.open();
      await both.opened; // never opens if the second key waits for the first
    };
    await Promise.race([
      Promise.all([lock.run("a", work), lock.run("b", work)]),
      sleep(5000).then(() => Promise.reject(new Error("the two keys waited for each other"))),
    ]);
  });

  it("passes a work's error to its caller and lets the next work of the key run", async () => {
    const lock = new KeyedLock(db.locks, "model");
    await expect(lock.run("k", () => Promise.reject(new Error("upload refused")))).rejects.toThrow("upload refused");
    await expect(lock.run("k", async () => "next")).resolves.toBe("next");
  });
});

// Two control planes on one PostgreSQL (a rolling update): each opens the
// database itself, as two processes do, so only the database's advisory
// lock can keep their works on one key apart.
describe("KeyedLock across two processes on one PostgreSQL", () => {
  let database: { url: string; drop(): Promise<void> };
  let first: Database;
  let second: Database;
  const warnings: string[] = [];
  const onWarning = (warning: Error): void => void warnings.push(warning.message);

  beforeAll(async () => {
    database = await createTestPostgresDatabase();
    first = await openDatabase({ url: database.url });
    second = await openDatabase({ url: database.url });
    process.on("warning", onWarning);
  });
  afterAll(async () => {
    process.off("warning", onWarning);
    await first?.close();
    await second?.close();
    await database?.drop();
  });
  afterEach(() => {
    warnings.length = 0;
  });

  /** Advisory locks granted on this test's database now (asked over a connection of Prisma's pool). */
  async function heldLocks(): Promise<number> {
    const rows = await second.prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM pg_locks
      WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
    return Number(rows[0]!.n);
  }

  it("never runs works of the same key in both at once", async () => {
    const one = new KeyedLock(first.locks, "operator");
    const two = new KeyedLock(second.locks, "operator");
    const probe = overlapProbe();
    await Promise.all(
      [0, 1, 2].flatMap(() => [one.run("pipeline", probe.work(60)), two.run("pipeline", probe.work(60))]),
    );
    expect(probe.maxInside()).toBe(1);
    expect(await heldLocks()).toBe(0);
  });

  it("runs works of different keys, or of different scopes, in both at once", async () => {
    const models = [new KeyedLock(first.locks, "model"), new KeyedLock(second.locks, "model")] as const;
    const operators = new KeyedLock(second.locks, "operator");
    const all = gate();
    let entered = 0;
    const work = async (): Promise<void> => {
      entered += 1;
      if (entered === 3) all.open();
      await all.opened;
    };
    await Promise.race([
      Promise.all([models[0].run("a", work), models[1].run("b", work), operators.run("a", work)]),
      sleep(5000).then(() => Promise.reject(new Error("works of different keys waited for each other"))),
    ]);
  });

  it("releases the lock when the work throws", async () => {
    const one = new KeyedLock(first.locks, "model");
    const two = new KeyedLock(second.locks, "model");
    await expect(one.run("broken", () => Promise.reject(new Error("config invalid")))).rejects.toThrow(
      "config invalid",
    );
    expect(await heldLocks()).toBe(0);
    await expect(two.run("broken", async () => "taken")).resolves.toBe("taken");
  });

  it("releases the lock of a holder whose connection died", async () => {
    const one = new KeyedLock(first.locks, "model");
    const two = new KeyedLock(second.locks, "model");
    const holding = gate();
    let holderInside = false;
    const holder = one.run("densenet", async () => {
      holderInside = true;
      await holding.opened;
      return "holder finished";
    });
    await until(() => holderInside, "the first process to hold the lock");
    let waiterInside = false;
    const waiter = two.run("densenet", async () => {
      waiterInside = true;
    });
    await sleep(300);
    expect(waiterInside).toBe(false); // the lock holds while its holder is alive

    // The holder's lock connection dies (its pod lost the network, an administrator ended it).
    const ended = await second.prisma.$queryRaw<Array<{ ended: boolean }>>`SELECT pg_terminate_backend(pid) AS ended
      FROM pg_locks WHERE locktype = 'advisory' AND granted
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
    expect(ended).toEqual([{ ended: true }]);
    await waiter;
    expect(waiterInside).toBe(true);
    holding.open();
    await expect(holder).resolves.toBe("holder finished");
    // Said once the work ended (process warnings are emitted on a later tick).
    await until(
      () =>
        warnings.some((warning) =>
          warning.includes('the connection holding the lock on "operon:model:densenet" was lost'),
        ),
      "the lost lock to be reported",
    );
    // The first process takes locks again, on a fresh connection.
    await expect(one.run("densenet", async () => "again")).resolves.toBe("again");
  });
});

describe("KeyedLock when another process keeps the lock past the wait limit", () => {
  it("fails the work unstarted as CONFLICT naming what is being changed, and runs the next work of the key", async () => {
    let refuse = true;
    // The database's answer after the wait limit (advisory-locks.test.ts shows PostgreSQL giving it).
    const busyOnce: AdvisoryLocks = {
      withLock: async (key, work) => {
        if (refuse) {
          refuse = false;
          throw new AdvisoryLockTimeoutError(key, 60_000);
        }
        return work();
      },
      close: async () => undefined,
    };
    const lock = new KeyedLock(busyOnce, "operator");
    let ran = false;
    const refused = await lock
      .run("pipeline", async () => {
        ran = true;
      })
      .catch((error: unknown) => error);
    expect(ran).toBe(false);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({
      code: "CONFLICT",
      message:
        'another control plane has been changing operator "pipeline" for over 60 s; try again once its change finished',
    });
    await expect(lock.run("pipeline", async () => "ran")).resolves.toBe("ran");
  });
});

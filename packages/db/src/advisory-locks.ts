// Named locks that hold across every process on one database (issue 23: two
// control planes on one PostgreSQL during a rolling update must not change
// the same model or operator at the same time).
//
// On PostgreSQL a lock is a session-level advisory lock taken on a
// connection of its own, outside Prisma's pool, and held for as long as the
// work runs. The lock lives in the server and belongs to that connection, so
// a holder that dies (or whose connection dies) releases it at once: nothing
// is ever left locked by a crashed process.
//
// On the embedded database there is nothing to take: its data directory is
// locked to one process (data-dir-lock.ts), so no other process can change
// anything, and in-process ordering is the caller's (KeyedLock in
// @operon/api).
import pg from "pg";

export interface AdvisoryLocks {
  /**
   * Runs `work` while this process holds the lock named `key` on the
   * database; every other process asking for the same key waits until the
   * work settled (resolved or threw). Different keys do not wait for each
   * other.
   * A lock held by someone else for longer than the wait limit fails with
   * AdvisoryLockTimeoutError naming the key.
   */
  withLock<T>(key: string, work: () => Promise<T>): Promise<T>;
  /** Refuses new locks and waits for the ones held now to be released. Idempotent. */
  close(): Promise<void>;
}

export interface PostgresAdvisoryLocksOptions {
  /** postgres(ql):// URL of the database the lock is shared on. */
  url: string;
  /** How long to wait for a lock someone else holds before failing; default 60 000 ms. */
  waitTimeoutMs?: number;
}

export const DEFAULT_LOCK_WAIT_TIMEOUT_MS = 60_000;

/** The lock on `key` stayed with another process for longer than the wait limit. */
export class AdvisoryLockTimeoutError extends Error {
  constructor(
    readonly key: string,
    readonly waitedMs: number,
    options?: ErrorOptions,
  ) {
    super(
      `waited ${Math.round(waitedMs / 1000)} s for the lock on "${key}", which another process on this database holds; try again when its change finished`,
      options,
    );
    this.name = "AdvisoryLockTimeoutError";
  }
}

/** Locks for a database only one process opens (the embedded one): the work runs at once. */
export function singleProcessLocks(): AdvisoryLocks {
  return {
    withLock: (_key, work) => work(),
    async close() {},
  };
}

// PostgreSQL's lock_timeout reports a lock wait it ended with this SQLSTATE.
const LOCK_NOT_AVAILABLE = "55P03";

/**
 * Advisory locks on PostgreSQL. The key's 64-bit hash (hashtextextended) is
 * the lock id: two keys that collide only wait for each other, which is safe.
 */
export function postgresAdvisoryLocks(options: PostgresAdvisoryLocksOptions): AdvisoryLocks {
  const waitTimeoutMs = options.waitTimeoutMs ?? DEFAULT_LOCK_WAIT_TIMEOUT_MS;
  if (!Number.isInteger(waitTimeoutMs) || waitTimeoutMs < 1)
    throw new RangeError(`waitTimeoutMs must be a positive whole number of milliseconds, got ${waitTimeoutMs}`);
  // The locks held now, so that close() can wait for them.
  const held = new Set<Promise<unknown>>();
  let closed = false;

  /**
   * A connection of its own per lock, not one from a pool: the work under a
   * lock uses Prisma's pool (sharing it would let held locks take every
   * connection the work needs), and a lock is held for as long as its work
   * runs (a model load can take minutes), so a bounded pool of lock
   * connections would make unrelated changes wait, or time out, for a slot.
   * Changes are rare (uploads, edits): one connection each costs little.
   */
  async function lockedRun<T>(key: string, work: () => Promise<T>): Promise<T> {
    const client = new pg.Client({
      connectionString: options.url,
      lock_timeout: waitTimeoutMs,
      application_name: "operon-lock",
      connectionTimeoutMillis: 10_000,
    });
    // The server may drop the connection while the work runs. PostgreSQL then
    // releases the lock; the work goes on (it cannot be interrupted safely).
    let lost: Error | undefined;
    client.on("error", (error) => {
      lost = error;
    });
    const started = Date.now();
    try {
      await client.connect();
      await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [key]);
    } catch (error) {
      await client.end().catch(() => undefined);
      if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE)
        throw new AdvisoryLockTimeoutError(key, Date.now() - started, { cause: error });
      throw new Error(`could not take the lock on "${key}": ${(error as Error).message}`, { cause: error });
    }
    try {
      return await work();
    } finally {
      // Ending the session releases the lock (and anything else it held): no unlock statement to fail.
      if (lost !== undefined)
        process.emitWarning(
          `the connection holding the lock on "${key}" was lost while its work ran (${lost.message}); PostgreSQL released the lock then`,
          "OperonDatabaseWarning",
        );
      await client.end().catch(() => undefined);
    }
  }

  return {
    withLock<T>(key: string, work: () => Promise<T>): Promise<T> {
      if (closed) return Promise.reject(new Error(`cannot take the lock on "${key}": the database's locks are closed`));
      const run = lockedRun(key, work);
      const settled = run.then(
        () => undefined,
        () => undefined,
      );
      held.add(settled);
      void settled.then(() => held.delete(settled));
      return run;
    },
    async close() {
      closed = true;
      await Promise.all(held);
    },
  };
}

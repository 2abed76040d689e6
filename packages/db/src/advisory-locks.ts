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
   * other (up to `maxHeld` at once per process; more wait for a free slot).
   * A lock held by someone else for longer than the wait limit fails with
   * AdvisoryLockTimeoutError naming the key.
   */
  withLock<T>(key: string, work: () => Promise<T>): Promise<T>;
  /** Ends the lock connections after the locks held now are released. Idempotent. */
  close(): Promise<void>;
}

export interface PostgresAdvisoryLocksOptions {
  /** postgres(ql):// URL of the database the lock is shared on. */
  url: string;
  /** How long to wait for a lock someone else holds before failing; default 60 000 ms. */
  waitTimeoutMs?: number;
  /** Locks this process may hold at once (one connection each); default 4. */
  maxHeld?: number;
}

export const DEFAULT_LOCK_WAIT_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_HELD_LOCKS = 4;

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
  const maxHeld = options.maxHeld ?? DEFAULT_MAX_HELD_LOCKS;
  if (!Number.isInteger(maxHeld) || maxHeld < 1)
    throw new RangeError(`maxHeld must be a positive whole number, got ${maxHeld}`);
  // A pool of its own: the work under a lock uses Prisma's pool, and sharing
  // one would let held locks take every connection the work needs.
  const pool = new pg.Pool({
    connectionString: options.url,
    max: maxHeld,
    lock_timeout: waitTimeoutMs,
    application_name: "operon-lock",
    connectionTimeoutMillis: 10_000,
  });
  pool.on("error", (error) =>
    process.emitWarning(
      `PostgreSQL dropped an idle lock connection (${error.message}); the next lock opens a new one`,
      "OperonDatabaseWarning",
    ),
  );
  let closing: Promise<void> | undefined;

  return {
    async withLock<T>(key: string, work: () => Promise<T>): Promise<T> {
      if (closing) throw new Error(`cannot take the lock on "${key}": the database's locks are closed`);
      const client = await pool.connect();
      // The server may drop a connection while the work runs. PostgreSQL then
      // releases the lock, the work goes on (it cannot be interrupted safely),
      // and the connection is discarded instead of returned to the pool.
      let lost: Error | undefined;
      const onError = (error: Error): void => {
        lost = error;
      };
      client.on("error", onError);
      const started = Date.now();
      try {
        await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [key]);
      } catch (error) {
        client.off("error", onError);
        client.release(true);
        if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE)
          throw new AdvisoryLockTimeoutError(key, Date.now() - started, { cause: error });
        throw new Error(`could not take the lock on "${key}": ${(error as Error).message}`, { cause: error });
      }
      try {
        return await work();
      } finally {
        if (lost === undefined) {
          try {
            await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [key]);
          } catch (error) {
            lost = error as Error;
          }
        }
        if (lost !== undefined)
          process.emitWarning(
            `the connection holding the lock on "${key}" was lost while its work ran (${lost.message}); PostgreSQL released the lock then`,
            "OperonDatabaseWarning",
          );
        client.off("error", onError);
        // A connection that failed is closed rather than reused: closing it also releases anything it held.
        client.release(lost);
      }
    },
    close() {
      closing ??= pool.end();
      return closing;
    },
  };
}

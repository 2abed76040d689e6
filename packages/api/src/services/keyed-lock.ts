import { AdvisoryLockTimeoutError, type AdvisoryLocks } from "@operon/db";
import { AppError } from "../app-error.js";

/**
 * Runs async work one at a time per key, in call order, in this process and
 * across every process on the same database. It keeps two changes of the
 * same operator or model (or the hardware profiles' single default) from
 * interleaving between the gateway call and the database transaction, also
 * when two control planes share one PostgreSQL (a rolling update).
 *
 * Two layers: an in-process queue per key keeps call order and means a
 * process asks the database for a key at most once at a time; the database
 * lock (AdvisoryLocks, held for the whole work) excludes the other
 * processes. `scope` names what the keys are ("operator", "model"), so equal
 * names of different things do not wait for each other. A lock another
 * process keeps past the wait limit fails the work unstarted as CONFLICT,
 * naming what is being changed.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  constructor(
    private readonly shared: AdvisoryLocks,
    private readonly scope: string,
  ) {}

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const locked = (): Promise<T> =>
      this.shared.withLock(`operon:${this.scope}:${key}`, work).catch((error: unknown) => {
        if (!(error instanceof AdvisoryLockTimeoutError)) throw error;
        throw new AppError(
          "CONFLICT",
          `another control plane has been changing ${this.scope} "${key}" for over ${Math.round(error.waitedMs / 1000)} s; try again once its change finished`,
          { cause: error },
        );
      });
    const result = previous.then(locked, locked);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}

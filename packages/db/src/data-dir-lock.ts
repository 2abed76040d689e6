import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";

/**
 * An exclusive lock on an embedded database's data directory: a file
 * holding the owner's pid, created with O_EXCL. A lock whose process is gone
 * (a crash, kill -9) is taken over. The embedded database is for one
 * process; several processes share a database through PostgreSQL.
 */
export const LOCK_FILE = "operon.lock";

export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly ownerPid: number,
  ) {
    super(
      `the embedded database in ${dataDir} is in use by process ${ownerPid} (a running operon serve?): ` +
        "stop that process first, or share a database between processes with PostgreSQL (--database-url / DATABASE_URL)",
    );
    this.name = "DataDirLockedError";
  }
}

export interface DataDirLock {
  release(): void;
}

export function acquireDataDirLock(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          rmSync(path, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = Number(readFileSync(path, "utf8").trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner))
        throw new DataDirLockedError(dataDir, owner);
      if (owner === process.pid) throw new DataDirLockedError(dataDir, owner);
      rmSync(path, { force: true }); // stale: its process is gone
    }
  }
  throw new Error(`could not lock the embedded database in ${dataDir}: another process keeps taking ${path}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

import { execFileSync } from "node:child_process";

/**
 * --worker-user <name>: the account backend worker processes (user code:
 * TypeScript models) run as when the server runs as root. Root's workers
 * could read /etc/shadow, every file of the server (its database under
 * --data-dir among them) and every other process's memory; a worker of an
 * unprivileged account cannot. The account must be able to read the model
 * repositories and the installed Operon (the worker entry).
 */
export interface WorkerUser {
  uid: number;
  gid: number;
  name: string;
  home: string;
}

/** Looks the account up in the system's user database (getent passwd); throws a clear error when it cannot be used. */
export function resolveWorkerUser(name: string, currentUid: number | undefined = process.getuid?.()): WorkerUser {
  if (currentUid !== 0) {
    throw new Error(
      `--worker-user ${name}: the server must run as root to start workers as another account (it runs as uid ${currentUid ?? "unknown"})`,
    );
  }
  let entry: string;
  try {
    entry =
      execFileSync("getent", ["passwd", name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })
        .trim()
        .split("\n")[0] ?? "";
  } catch {
    throw new Error(`--worker-user ${name}: no such account (getent passwd ${name} found none)`);
  }
  const fields = entry.split(":");
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  if (fields.length < 7 || !Number.isInteger(uid) || !Number.isInteger(gid))
    throw new Error(`--worker-user ${name}: cannot read its passwd entry '${entry}'`);
  if (uid === 0)
    throw new Error(`--worker-user ${name}: the account is root (uid 0); name an unprivileged account such as nobody`);
  return { uid, gid, name: fields[0]!, home: fields[5] || "/" };
}

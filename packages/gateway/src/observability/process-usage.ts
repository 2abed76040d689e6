import { readFile } from "node:fs/promises";

/**
 * CPU time and resident memory of another process (a backend worker), read
 * from Linux's procfs. Elsewhere, or when the process is gone, both are
 * null: callers show "unknown", never a guess.
 *
 * /proc/<pid>/stat fields 14 and 15 (utime, stime) are in clock ticks;
 * Linux reports them at USER_HZ = 100 on every architecture Node runs on.
 * /proc/<pid>/statm field 2 is resident pages; pages are 4096 bytes on the
 * x86-64 and common arm64 kernels this server targets.
 */
export interface ProcessUsage {
  cpuSeconds: number | null;
  rssBytes: number | null;
}

const CLOCK_TICKS_PER_SECOND = 100;
const PAGE_BYTES = 4096;

export async function readProcessUsage(pid: number): Promise<ProcessUsage> {
  const [stat, statm] = await Promise.all([readProc(pid, "stat"), readProc(pid, "statm")]);
  return {
    cpuSeconds: stat === undefined ? null : cpuSecondsOfStat(stat),
    rssBytes: statm === undefined ? null : rssBytesOfStatm(statm),
  };
}

/**
 * CPU time of one thread of a process (a backend instance on a gateway
 * thread): /proc/<pid>/task/<tid>/stat. Its memory is the process's, so
 * rssBytes is null.
 */
export async function readThreadUsage(pid: number, tid: number): Promise<ProcessUsage> {
  const stat = await readProc(pid, `task/${tid}/stat`);
  return { cpuSeconds: stat === undefined ? null : cpuSecondsOfStat(stat), rssBytes: null };
}

/** utime + stime of a /proc/<pid>/stat line, in seconds; null when it does not parse. */
export function cpuSecondsOfStat(stat: string): number | null {
  // Field 2 (the command) is in parentheses and may hold spaces or ')': fields 3.. follow its last ')'.
  const close = stat.lastIndexOf(")");
  if (close === -1) return null;
  const fields = stat
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  const utime = Number(fields[14 - 3]);
  const stime = Number(fields[15 - 3]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  return (utime + stime) / CLOCK_TICKS_PER_SECOND;
}

/** Resident bytes of a /proc/<pid>/statm line; null when it does not parse. */
export function rssBytesOfStatm(statm: string): number | null {
  const pages = Number(statm.trim().split(/\s+/)[1]);
  return Number.isFinite(pages) ? pages * PAGE_BYTES : null;
}

async function readProc(pid: number, file: string): Promise<string | undefined> {
  if (process.platform !== "linux") return undefined;
  return readFile(`/proc/${pid}/${file}`, "utf8").catch(() => undefined);
}

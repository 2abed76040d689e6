import { readFileSync } from "node:fs";
import type { SandboxLimits } from "./worker-sandbox.js";

/** How often a busy sandboxed worker is looked at, ms (two small procfs reads). */
export const SANDBOX_CHECK_INTERVAL_MS = 50;

/** Kernel clock ticks per second, the unit of utime/stime in /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const CLOCK_TICKS_PER_SECOND = 100;
const PAGE_BYTES = 4096;

/** The part of a worker the guard watches and stops (WorkerProcess). */
export interface GuardedWorker {
  readonly pid: number;
  readonly inFlight: number;
  oldestExecuteSentAt(): number | undefined;
  terminate(reason: string): void;
  once(event: "exit", listener: () => void): unknown;
}

/** CPU time (ms) and resident memory (bytes) of a process; undefined once it is gone. */
export type ProcessUsageReader = (pid: number) => { cpuMs: number; rssBytes: number } | undefined;

export function procfsUsage(pid: number): { cpuMs: number; rssBytes: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces), from field 3 (state) on: utime is 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    const resident = Number(readFileSync(`/proc/${pid}/statm`, "utf8").split(" ")[1]);
    return { cpuMs: (ticks * 1000) / CLOCK_TICKS_PER_SECOND, rssBytes: resident * PAGE_BYTES };
  } catch {
    return undefined;
  }
}

/**
 * Enforces a sandboxed worker's per-execution limits from the gateway:
 * while it has requests outstanding, the CPU time it used since it became
 * busy, its resident memory, and the age of its oldest execute (the
 * model's execute timeout) are checked every SANDBOX_CHECK_INTERVAL_MS; a
 * worker over any is terminated, its requests failing with the limit it
 * broke, and its owner restarts it. From outside because a model stuck in
 * a synchronous loop stops its own process's timers, and the in-worker hang
 * guard (a worker thread) is forbidden in the sandbox.
 *
 * The CPU budget counts from the moment the worker became busy, so
 * back-to-back executions share it; an idle moment between two resets it.
 */
export class SandboxGuard {
  private readonly timer: NodeJS.Timeout;
  /** CPU time of the process when it became busy; undefined while idle. */
  private busyCpuMs: number | undefined;

  constructor(
    private readonly worker: GuardedWorker,
    private readonly limits: SandboxLimits & { executeTimeoutMs: number },
    private readonly readUsage: ProcessUsageReader = procfsUsage,
  ) {
    this.timer = setInterval(() => this.check(), SANDBOX_CHECK_INTERVAL_MS);
    this.timer.unref();
    worker.once("exit", () => clearInterval(this.timer));
  }

  private check(): void {
    if (this.worker.inFlight === 0) {
      this.busyCpuMs = undefined;
      return;
    }
    const usage = this.readUsage(this.worker.pid);
    if (usage === undefined) return;
    this.busyCpuMs ??= usage.cpuMs;
    const cpuMs = usage.cpuMs - this.busyCpuMs;
    const { cpuMsPerExecution, memoryMb, executeTimeoutMs } = this.limits;
    if (cpuMs > cpuMsPerExecution) {
      return this.stop(`it used more than its CPU time limit of ${cpuMsPerExecution} ms (sandbox)`);
    }
    if (usage.rssBytes > memoryMb * 1024 * 1024) {
      return this.stop(
        `its resident memory (${Math.round(usage.rssBytes / (1024 * 1024))} MiB) went over its limit of ${memoryMb} MiB (sandbox)`,
      );
    }
    const sentAt = this.worker.oldestExecuteSentAt();
    if (sentAt !== undefined && Date.now() - sentAt > executeTimeoutMs) {
      this.stop(`an execute did not return within ${executeTimeoutMs} ms (sandbox)`);
    }
  }

  private stop(reason: string): void {
    clearInterval(this.timer);
    this.worker.terminate(reason);
  }
}

import type { ChildProcess } from "node:child_process";

/**
 * Keeps a child process running: when it exits without being asked to, it
 * is started again after a backoff that doubles from `initialBackoffMs` up
 * to `maxBackoffMs`, and falls back to the initial delay once a child has
 * run for `stableAfterMs`. stop() ends restarts first, then the child, so a
 * shutdown never races a restart. The backend workers are supervised the
 * same way (instances/model-instances.ts).
 */
export interface SupervisorOptions {
  spawn: () => ChildProcess;
  /** Called for every start after the first one, with the attempt number and the delay waited. */
  onRestart?: (info: { attempt: number; delayMs: number; pid: number | undefined }) => void;
  /** Called when a child exits without stop() (before the restart is scheduled). */
  onUnexpectedExit?: (info: { code: number | null; signal: NodeJS.Signals | null }) => void;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  stableAfterMs?: number;
  /** How long stop() waits after SIGTERM before SIGKILL. */
  killAfterMs?: number;
}

export class ProcessSupervisor {
  private child: ChildProcess;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private attempts = 0;
  private startedAt = Date.now();
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly stableAfterMs: number;

  constructor(private readonly options: SupervisorOptions) {
    this.initialBackoffMs = options.initialBackoffMs ?? 1_000;
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.stableAfterMs = options.stableAfterMs ?? 60_000;
    this.child = this.launch();
  }

  /** The child running now (a new one after each restart). */
  get current(): ChildProcess {
    return this.child;
  }

  get restarts(): number {
    return this.attempts;
  }

  private launch(): ChildProcess {
    const child = this.options.spawn();
    this.startedAt = Date.now();
    child.once("exit", (code, signal) => {
      if (this.stopping || child !== this.child) return;
      this.options.onUnexpectedExit?.({ code, signal });
      if (Date.now() - this.startedAt >= this.stableAfterMs) this.attempts = 0;
      const delayMs = Math.min(this.maxBackoffMs, this.initialBackoffMs * 2 ** Math.min(this.attempts, 20));
      this.attempts += 1;
      const attempt = this.attempts;
      this.restartTimer = setTimeout(() => {
        this.restartTimer = undefined;
        if (this.stopping) return;
        this.child = this.launch();
        this.options.onRestart?.({ attempt, delayMs, pid: this.child.pid });
      }, delayMs);
    });
    return child;
  }

  /** Ends restarts, then the child (SIGTERM, SIGKILL after killAfterMs). Idempotent. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const force = setTimeout(() => child.kill("SIGKILL"), this.options.killAfterMs ?? 25_000);
    await exited;
    clearTimeout(force);
  }
}

/**
 * Work that runs every `intervalMs` (samplers, the resource scheduler, the
 * repository poller, sweeps): one timer, runs that never overlap (a tick
 * while a run is still going is skipped, not queued), every failure
 * reported to `onError` and never thrown into the timer, and a stop that
 * waits for the run in progress. The timer does not keep the process alive.
 */
export interface PeriodicTaskOptions {
  /** Milliseconds between runs; 0 or less: start() does nothing (runNow() still works). */
  intervalMs: number;
  /** Run once at start() as well (a sampler's baseline, the scheduler's first period); default false. */
  runAtStart?: boolean;
  /** Gets what a run threw or rejected with. */
  onError(error: unknown): void;
}

export class PeriodicTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly work: () => unknown,
    private readonly options: PeriodicTaskOptions,
  ) {}

  /** Starts the timer; idempotent, and a no-op once stopped or when the interval is not positive. */
  start(): void {
    if (this.timer !== undefined || this.stopped || !(this.options.intervalMs > 0)) return;
    if (this.options.runAtStart === true) void this.runNow();
    this.timer = setInterval(() => void this.runNow(), this.options.intervalMs);
    this.timer.unref();
  }

  /** True while the timer runs. */
  get started(): boolean {
    return this.timer !== undefined;
  }

  /** Runs the work now unless a run is in progress (then resolves when that one ends). Never rejects. */
  runNow(): Promise<void> {
    if (this.running !== undefined) return this.running;
    const run = (async () => {
      try {
        await this.work();
      } catch (error) {
        this.options.onError(error);
      }
    })();
    this.running = run;
    void run.then(() => {
      if (this.running === run) this.running = undefined;
    });
    return run;
  }

  /** Stops the timer and waits for the run in progress. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}

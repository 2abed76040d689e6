/**
 * The control plane's one measuring slot: perf runs, and any other work that
 * loads the gateway to measure it (the config search), take turns in it so
 * that no two measurements share the host and spoil each other's numbers.
 *
 * Contract of run(label, fn):
 * - fn starts only after every earlier run() has settled (first come, first
 *   served) and nothing else runs in the slot until fn's promise settles.
 *   Its result or error is passed through unchanged.
 * - fn must end by itself (bound it in time); the slot has no timeout. A
 *   caller that may want to give up while waiting passes `signal`: when it
 *   aborts before fn started, run() rejects at once with the signal's reason
 *   and fn is never called (its turn is skipped); once fn started, stopping it is
 *   fn's own business (hand it the same signal).
 * - Not reentrant: calling run() from inside fn waits for fn, forever.
 * - In process only: several control planes on one database each have their
 *   own slot (one control plane per deployment is the supported set-up).
 */
export class ExclusiveSlot {
  private tail: Promise<void> = Promise.resolve();
  private currentLabel: string | undefined;
  private waitingCount = 0;

  /** What holds the slot now, for status displays; undefined while it is free. */
  get current(): string | undefined {
    return this.currentLabel;
  }

  /** How many run() calls wait for their turn. */
  get waiting(): number {
    return this.waitingCount;
  }

  run<T>(label: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    this.waitingCount += 1;
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    return new Promise<T>((resolve, reject) => {
      // Aborted while waiting: rejected at once (a cancel must not wait for the work ahead); the turn then passes on.
      let abandoned = false;
      const onAbort = (): void => {
        abandoned = true;
        this.waitingCount -= 1;
        reject(signal!.reason as Error);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      void previous.then(async () => {
        signal?.removeEventListener("abort", onAbort);
        if (abandoned) {
          release();
          return;
        }
        this.waitingCount -= 1;
        this.currentLabel = label;
        try {
          resolve(await fn());
        } catch (error) {
          reject(error as Error);
        } finally {
          this.currentLabel = undefined;
          release();
        }
      });
    });
  }
}

import type { CancelSignal } from "@operon/protocol/inference";
import { OperonError } from "@operon/protocol/errors";

/**
 * A counting semaphore: the in-flight cap of one step across requests
 * (limit 0 = unlimited, still counted). Waiters are served in order; an
 * aborted waiter leaves the queue with CANCELLED.
 */
export class StepLimiter {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly limit: number) {}

  get inFlight(): number {
    return this.active;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /** Resolves with the release function once a slot is free. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(cancelled(signal));
    if (this.limit <= 0 || this.active < this.limit) {
      this.active += 1;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.waiters.indexOf(grant);
        if (index !== -1) this.waiters.splice(index, 1);
        reject(cancelled(signal!));
      };
      const grant = (): void => {
        signal?.removeEventListener("abort", onAbort);
        this.active += 1;
        resolve(this.releaser());
      };
      this.waiters.push(grant);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active -= 1;
      this.waiters.shift()?.();
    };
  }
}

function cancelled(signal: CancelSignal): OperonError {
  const reason: unknown = signal.reason;
  return reason instanceof OperonError
    ? reason
    : new OperonError("CANCELLED", "cancelled while waiting for the step's in-flight cap");
}

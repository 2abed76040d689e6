import type { CancelSignal } from "@operon/protocol/inference";

/**
 * A request's cancellation: a CancelSignal and the abort() that fires it.
 *
 * Why not an AbortController: every inference request needs one (the
 * client may go away while the request is queued), and in Node 20 creating
 * an AbortController and adding and removing one listener costs 3–8 µs,
 * a large share of a small model's whole request path. This one is a
 * plain object: nearly free until it is used.
 *
 * Contract, as AbortSignal's: abort() fires each listener once, in the
 * order added, and later calls do nothing; a listener added after the abort
 * is not called (callers check `aborted` first, as they must with
 * AbortSignal). Listeners are always once-only here: an abort happens once.
 */
export class Cancellation implements CancelSignal {
  private abortedWith: { reason: unknown } | undefined;
  /** Most requests have at most one listener (the scheduler's): kept without an array until a second comes. */
  private first: (() => void) | undefined;
  private more: Array<() => void> | undefined;

  get aborted(): boolean {
    return this.abortedWith !== undefined;
  }

  get reason(): unknown {
    return this.abortedWith?.reason;
  }

  /** The signal to hand to the request (this object; the name says what the receiver may do with it). */
  get signal(): CancelSignal {
    return this;
  }

  addEventListener(_type: "abort", listener: () => void): void {
    if (this.abortedWith !== undefined) return;
    if (this.first === undefined && this.more === undefined) this.first = listener;
    else (this.more ??= []).push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    if (this.first === listener) {
      this.first = undefined;
      return;
    }
    const index = this.more?.indexOf(listener) ?? -1;
    if (index >= 0) this.more!.splice(index, 1);
  }

  abort(reason: unknown): void {
    if (this.abortedWith !== undefined) return;
    this.abortedWith = { reason };
    const listeners = this.first !== undefined ? [this.first, ...(this.more ?? [])] : (this.more ?? []);
    this.first = undefined;
    this.more = undefined;
    for (const listener of listeners) listener();
  }
}

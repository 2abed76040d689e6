/**
 * How many requests a model's clients have recently kept in flight at once:
 * the most requests its scheduler held together (queued + executing) over
 * the last one to two windows, and how many arrived meanwhile.
 *
 * The dynamic batcher uses it to tell a wait that can pay from one that
 * cannot. Clients that wait for their answers (the common case: a service
 * calling the model, a benchmark at concurrency N) cannot send more than they
 * have shown they keep in flight; once all of those are at the scheduler,
 * no request can join a waiting batch until one of them is answered, and
 * waiting out max_queue_delay_microseconds only adds latency (at
 * concurrency 1, the whole delay on every request).
 *
 * Two windows, current and previous, so the peak forgets a burst after one
 * to two windows without keeping a history. Until `minArrivals` requests
 * have arrived within them, there is no evidence and the peak says nothing
 * (the batcher waits as configured): a first burst after a quiet spell
 * still gathers into one batch.
 */
export class ConcurrencyPeak {
  private windowStart: bigint | undefined;
  private currentPeak = 0;
  private previousPeak = 0;
  private currentArrivals = 0;
  private previousArrivals = 0;

  constructor(
    private readonly windowNs: bigint = 1_000_000_000n,
    private readonly minArrivals = 16,
  ) {}

  /** A request arrived; `inFlight` counts it with every other request queued or executing. */
  noteArrival(inFlight: number, now: bigint): void {
    this.roll(now);
    this.currentArrivals += 1;
    if (inFlight > this.currentPeak) this.currentPeak = inFlight;
  }

  /**
   * True when recent traffic says no request can join: enough arrivals to
   * judge, and `inFlight` (queued + executing now) already at the most the
   * clients kept in flight.
   */
  allHere(inFlight: number, now: bigint): boolean {
    this.roll(now);
    if (this.currentArrivals + this.previousArrivals < this.minArrivals) return false;
    return inFlight >= Math.max(this.currentPeak, this.previousPeak);
  }

  private roll(now: bigint): void {
    if (this.windowStart === undefined) {
      this.windowStart = now;
      return;
    }
    const elapsed = now - this.windowStart;
    if (elapsed < this.windowNs) return;
    // One window passed: the current becomes the previous. Two or more: both are stale.
    const oneWindow = elapsed < 2n * this.windowNs;
    this.previousPeak = oneWindow ? this.currentPeak : 0;
    this.previousArrivals = oneWindow ? this.currentArrivals : 0;
    this.currentPeak = 0;
    this.currentArrivals = 0;
    this.windowStart = now;
  }
}

/**
 * Keeps automatic perf runs out of served traffic's way: a queued automatic
 * run starts only while the gateway serves (almost) nothing else, judged by
 * the rate of requests it counted over a short window (its statistics API,
 * all models), and waits, bounded, while it is busier. Manual runs skip the
 * gate: a person asked for them now.
 *
 * The rate is read from the gateway rather than from the usage sampler's CPU
 * share because the sampler's last sample can be up to --usage-sample-secs
 * old, and because requests are what the run would compete with: the
 * gateway's event loop and instances serve both.
 */
export interface TrafficProbe {
  /** Requests per second the gateway served over a short window (a second or so); takes that long. */
  requestsPerSec(signal: AbortSignal): Promise<number>;
}

export interface HeadroomPolicy {
  maxRequestsPerSec: number;
  maxWaitMs: number;
  /** Pause between checks while busy. */
  recheckMs: number;
}

export type HeadroomResult =
  | { ok: true; waitedMs: number; requestsPerSec: number; checks: number }
  | { ok: false; waitedMs: number; requestsPerSec: number; checks: number; reason: string };

export interface GateClock {
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const REAL_GATE_CLOCK: GateClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason as Error);
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      };
      signal.addEventListener("abort", onAbort, { once: true });
    }),
};

/**
 * Resolves ok once a check finds the traffic under the policy's limit, or
 * not ok (with the reason) once maxWaitMs has passed busy. A probe that
 * fails counts as busy (the gateway may be struggling). Rejects with the
 * signal's reason when it aborts (a cancel).
 */
export async function waitForHeadroom(
  probe: TrafficProbe,
  policy: HeadroomPolicy,
  signal: AbortSignal,
  options: { clock?: GateClock; onBusy?: (requestsPerSec: number, waitedMs: number) => void } = {},
): Promise<HeadroomResult> {
  const clock = options.clock ?? REAL_GATE_CLOCK;
  const started = clock.now();
  let checks = 0;
  let last = Number.NaN;
  for (;;) {
    if (signal.aborted) throw signal.reason as Error;
    checks += 1;
    try {
      last = await probe.requestsPerSec(signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason as Error;
      last = Number.POSITIVE_INFINITY;
    }
    const waitedMs = clock.now() - started;
    if (last <= policy.maxRequestsPerSec) return { ok: true, waitedMs, requestsPerSec: last, checks };
    if (waitedMs >= policy.maxWaitMs) {
      const rate = Number.isFinite(last) ? `${Math.round(last * 10) / 10} requests/s` : "an unreachable gateway";
      return {
        ok: false,
        waitedMs,
        requestsPerSec: last,
        checks,
        reason: `the host had no headroom for ${Math.round(waitedMs / 1000)} s (last check: ${rate}, limit ${policy.maxRequestsPerSec}); start it by hand or raise the limit`,
      };
    }
    options.onBusy?.(last, waitedMs);
    await clock.sleep(Math.min(policy.recheckMs, Math.max(0, policy.maxWaitMs - waitedMs)), signal);
  }
}

/**
 * Keeps automatic perf runs out of served traffic's way, on headroom rather
 * than silence: a queued automatic run starts once
 * - the measured model's own traffic (users' requests to it, or to an
 *   operator's step models) is at most `maxRequestsPerSec`: its instances
 *   would serve the run and those users both, and the numbers would be
 *   theirs as much as the run's; and
 * - the gateway (its process and its workers) leaves at least
 *   `minIdleCores` of the host's cores idle: room for the run's load.
 * Traffic to other models does not hold the run back while cores are free
 * (a gateway with a steady 50 requests/s to one model still gets reports for
 * the others); the run measures at the model's lowest priority where it has
 * priority levels, and the report records the background load. It waits,
 * bounded, while there is no headroom. Manual runs skip the gate: a person
 * asked for them now.
 *
 * Both are read from the gateway over a short window rather than from the
 * usage sampler, whose last sample can be up to --usage-sample-secs old.
 */
export interface TrafficProbe {
  /**
   * Requests per second the gateway served over a short window (a second or
   * so; takes that long), to the models `counts` accepts (default: all).
   */
  requestsPerSec(signal: AbortSignal, counts?: (model: string) => boolean): Promise<number>;
  /** Cores of the host the gateway and its workers left idle over a short window; undefined when unknown. */
  idleCores?(signal: AbortSignal): Promise<number | undefined>;
}

export interface HeadroomPolicy {
  /** The measured model's own traffic, at most. */
  maxRequestsPerSec: number;
  /** Idle cores the gateway must leave, at least; undefined = not checked. */
  minIdleCores?: number | undefined;
  maxWaitMs: number;
  /** Pause between checks while busy. */
  recheckMs: number;
}

interface HeadroomFigures {
  waitedMs: number;
  /** The measured model's own traffic at the last check. */
  requestsPerSec: number;
  /** Idle cores at the last check; null when unknown. */
  idleCores: number | null;
  checks: number;
}

export type HeadroomResult = (HeadroomFigures & { ok: true }) | (HeadroomFigures & { ok: false; reason: string });

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
  options: {
    clock?: GateClock;
    /** The measured model's entries in the gateway's statistics (default: every model). */
    counts?: (model: string) => boolean;
    onBusy?: (requestsPerSec: number, waitedMs: number, idleCores: number | null) => void;
  } = {},
): Promise<HeadroomResult> {
  const clock = options.clock ?? REAL_GATE_CLOCK;
  const started = clock.now();
  let checks = 0;
  let last = Number.NaN;
  let idle: number | null = null;
  for (;;) {
    if (signal.aborted) throw signal.reason as Error;
    checks += 1;
    try {
      last = await probe.requestsPerSec(signal, options.counts);
      idle = policy.minIdleCores !== undefined && probe.idleCores ? ((await probe.idleCores(signal)) ?? null) : null;
    } catch (error) {
      if (signal.aborted) throw signal.reason as Error;
      last = Number.POSITIVE_INFINITY;
      idle = null;
    }
    const waitedMs = clock.now() - started;
    const coresFree = policy.minIdleCores === undefined || idle === null || idle >= policy.minIdleCores;
    if (last <= policy.maxRequestsPerSec && coresFree)
      return { ok: true, waitedMs, requestsPerSec: last, idleCores: idle, checks };
    if (waitedMs >= policy.maxWaitMs) {
      const why = !Number.isFinite(last)
        ? "last check: an unreachable gateway"
        : last > policy.maxRequestsPerSec
          ? `last check: the model's own traffic ${round1(last)} requests/s, limit ${policy.maxRequestsPerSec}`
          : `last check: ${round1(idle ?? 0)} idle cores, at least ${policy.minIdleCores} needed`;
      return {
        ok: false,
        waitedMs,
        requestsPerSec: last,
        idleCores: idle,
        checks,
        reason: `the host had no headroom for ${Math.round(waitedMs / 1000)} s (${why}); start it by hand or raise the limit`,
      };
    }
    options.onBusy?.(last, waitedMs, idle);
    await clock.sleep(Math.min(policy.recheckMs, Math.max(0, policy.maxWaitMs - waitedMs)), signal);
  }
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}

import type { Logger } from "@operon/protocol/logger";
import type { OnlineLatency } from "@operon/protocol/online-latency";
import type { GatewayClient } from "../gateway/gateway-client.js";
import type { AimdDecision, AimdLimiter, OnlineSample } from "./aimd.js";

/**
 * Feeds a running job's AIMD limiter (aimd.ts) once per window with the
 * online p99 of its target, read from the gateway's online_latency
 * extension: the job's own requests are left out there (its key is a
 * batch job's), so this is what online clients saw, over the windows the
 * limiter judges (`spanOf`). During a later probe only the tail of the
 * probe is read, after the job's requests in flight have drained. A gateway that cannot say (an older one, a call that failed)
 * gives no sample: the limiter then judges by the job's own latency alone.
 */
export const DEFAULT_AIMD_WINDOW_MS = 1_000;
/** How long a probe waits for the job's requests in flight to finish before online latency counts as "without the job". */
const PROBE_DRAIN_MS = 400;
/** The span online_latency takes (window_ms). */
const MIN_SPAN_MS = 100;
const MAX_SPAN_MS = 60_000;

export interface OnlineLatencyMonitorOptions {
  gateway: GatewayClient;
  target: { name: string; version?: string | undefined };
  limiter: AimdLimiter;
  logger: Logger;
  windowMs?: number;
  /** Each window's decision (the job's page and tests read the limit from the checkpoints). */
  onDecision?: (decision: AimdDecision) => void;
}

export class OnlineLatencyMonitor {
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  private warned = false;

  private constructor(private readonly options: OnlineLatencyMonitorOptions) {
    this.run().catch((error: unknown) =>
      options.logger.error({ err: (error as Error).message }, "batch job: the concurrency monitor stopped"),
    );
  }

  static start(options: OnlineLatencyMonitorOptions): OnlineLatencyMonitor {
    return new OnlineLatencyMonitor(options);
  }

  /**
   * Idempotent. Resolves at once: a read of the gateway still in flight is
   * not waited for (on a shutdown the gateway may be going away; its answer
   * is dropped), and no window is decided after this.
   */
  stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.wake?.();
    return Promise.resolve();
  }

  private async run(): Promise<void> {
    const windowMs = this.options.windowMs ?? DEFAULT_AIMD_WINDOW_MS;
    const { limiter } = this.options;
    while (!this.stopped) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = setTimeout(resolve, windowMs);
      });
      if (this.stopped) return;
      const sample = await this.sample(spanOf(limiter, windowMs));
      if (this.stopped) return;
      const decision = limiter.window(sample);
      this.options.onDecision?.(decision);
    }
  }

  private async sample(spanMs: number): Promise<OnlineSample | undefined> {
    const { gateway, target, logger } = this.options;
    try {
      return combine(await gateway.onlineLatency(target.name, target.version, spanMs), spanMs);
    } catch (error) {
      if (!this.warned)
        logger.warn(
          { target: target.name, err: (error as Error).message },
          "batch job: the gateway does not report online latency; the job backs off on its own latency only",
        );
      this.warned = true;
      return undefined;
    }
  }
}

/**
 * How far back the online latency read at the end of a window reaches: the windows the limiter asks for
 * (aimd.ts `readWindows`), less the drain of the job's requests in flight during a later probe; the first
 * probe reads the history from before the job sent anything, so it needs no drain. The gateway takes
 * 100 ms to 60 s.
 */
export function spanOf(limiter: Pick<AimdLimiter, "probing" | "readWindows" | "firstProbe">, windowMs: number): number {
  const windows = limiter.readWindows;
  const spanMs =
    limiter.probing && !limiter.firstProbe
      ? Math.max(windowMs / 2, windows * windowMs - PROBE_DRAIN_MS)
      : windows * windowMs;
  return Math.min(MAX_SPAN_MS, Math.max(MIN_SPAN_MS, spanMs));
}

/** One sample over every served version: their counts added, the worst p99 (a job must not hurt any of them). */
export function combine(entries: readonly OnlineLatency[], spanMs: number): OnlineSample {
  let count = 0;
  let p99Us: number | null = null;
  for (const entry of entries) {
    count += entry.count;
    if (entry.p99_us !== null && entry.count > 0) p99Us = Math.max(p99Us ?? 0, entry.p99_us);
  }
  return { spanMs, count, p99Ms: p99Us === null ? null : p99Us / 1000 };
}

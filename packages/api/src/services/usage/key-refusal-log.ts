import type { Logger } from "@operon/protocol/logger";

/** How often a refusal that lasts is said again (a reminder, not a line per sample). */
export const REFUSAL_REMINDER_MS = 15 * 60_000;

export interface KeyRefusalLogOptions {
  /** Minimum time between two lines about the same lasting refusal; default REFUSAL_REMINDER_MS. */
  reminderMs?: number;
  /** Clock, epoch milliseconds (tests pass their own). */
  now?: () => number;
}

interface Refusal {
  since: number;
  loggedAt: number;
  /** Reads refused since the last line about it. */
  unlogged: number;
}

/**
 * Whether a read failed because the gateway refused the control plane's key (HTTP 401/403: the internal key
 * revoked by hand, or not yet read by that gateway; control-plane-key.ts).
 */
export function isKeyRefusal(error: unknown): boolean {
  const status = (error as { status?: unknown } | null)?.status;
  return status === 401 || status === 403;
}

/**
 * The log lines of a gateway refusing the control plane's key, said when the refusal starts, again at most every
 * `reminderMs` while it lasts (with how many reads were refused meanwhile), and once when the key is accepted
 * again. A revoked key fails every read of every sample (every second with --usage-sample-secs 1): one warning
 * per read would bury everything else in the log, and none would let the revoked key fail silently.
 *
 * `source` names what was read ("workers of gateway-b:8000"); each source has its own state.
 */
export class KeyRefusalLog {
  private readonly refusals = new Map<string, Refusal>();
  private readonly reminderMs: number;
  private readonly now: () => number;

  constructor(
    private readonly logger: Logger,
    options: KeyRefusalLogOptions = {},
  ) {
    this.reminderMs = options.reminderMs ?? REFUSAL_REMINDER_MS;
    this.now = options.now ?? Date.now;
  }

  /** The read of `source` was refused; `message` is the warning's text, said when due. */
  refused(source: string, message: string, error: unknown): void {
    const now = this.now();
    const refusal = this.refusals.get(source);
    if (refusal === undefined) {
      this.refusals.set(source, { since: now, loggedAt: now, unlogged: 0 });
      this.logger.warn({ err: error, source }, message);
      return;
    }
    refusal.unlogged += 1;
    if (now - refusal.loggedAt < this.reminderMs) return;
    this.logger.warn(
      {
        err: error,
        source,
        refusedSince: new Date(refusal.since).toISOString(),
        refusedReadsSinceLastLine: refusal.unlogged,
      },
      `${message} (still refused: ${refusal.unlogged} reads since the last line about it)`,
    );
    refusal.loggedAt = now;
    refusal.unlogged = 0;
  }

  /** The read of `source` succeeded (or failed for another reason): a refusal that was said is over. */
  accepted(source: string): void {
    const refusal = this.refusals.get(source);
    if (refusal === undefined) return;
    this.refusals.delete(source);
    this.logger.info(
      { source, refusedSince: new Date(refusal.since).toISOString() },
      `the gateway accepts the control plane's key again (${source})`,
    );
  }
}

import type { Logger } from "@operon/protocol/logger";

/** How often a failure that lasts is said again (a reminder, not a line per sample). */
export const FAILURE_REMINDER_MS = 15 * 60_000;

export interface LastingFailureLogOptions {
  /** Minimum time between two lines about the same lasting failure; default FAILURE_REMINDER_MS. */
  reminderMs?: number;
  /** Clock, epoch milliseconds (tests pass their own). */
  now?: () => number;
}

interface Failure {
  since: number;
  loggedAt: number;
  /** Failed reads since the last line about it. */
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

/** How a LastingFailureLog words its lines: the reminder's note and field names, and the line when it is over. */
export interface FailureWording {
  /** "refused": the reminder says "(still refused: N reads since the last line about it)". */
  still: string;
  /** Field names of the reminder: when the failure began, and how many reads failed since the last line. */
  sinceField: string;
  countField: string;
  /** The info line when a read of `source` succeeds again. */
  over: (source: string) => string;
}

/**
 * The log lines of a read that keeps failing, sample after sample: said when the failure starts, again at most
 * every `reminderMs` while it lasts (with how many reads failed meanwhile), and once when a read succeeds again.
 * A gateway that is down, or that refuses the control plane's key, fails every read of every sample (every 15 s
 * by default, every second with --usage-sample-secs 1): a warning per read would bury everything else in the
 * log, and none would let the failure pass unseen.
 *
 * `source` names what was read ("workers of gateway-b:8000"); each source has its own state.
 */
export class LastingFailureLog {
  private readonly failures = new Map<string, Failure>();
  private readonly reminderMs: number;
  private readonly now: () => number;

  constructor(
    private readonly logger: Logger,
    private readonly wording: FailureWording,
    options: LastingFailureLogOptions = {},
  ) {
    this.reminderMs = options.reminderMs ?? FAILURE_REMINDER_MS;
    this.now = options.now ?? Date.now;
  }

  /** The read of `source` failed; `message` is the warning's text, said when due. */
  failed(source: string, message: string, error: unknown): void {
    const now = this.now();
    const failure = this.failures.get(source);
    if (failure === undefined) {
      this.failures.set(source, { since: now, loggedAt: now, unlogged: 0 });
      this.logger.warn({ err: error, source }, message);
      return;
    }
    failure.unlogged += 1;
    if (now - failure.loggedAt < this.reminderMs) return;
    this.logger.warn(
      {
        err: error,
        source,
        [this.wording.sinceField]: new Date(failure.since).toISOString(),
        [this.wording.countField]: failure.unlogged,
      },
      `${message} (${this.wording.still}: ${failure.unlogged} reads since the last line about it)`,
    );
    failure.loggedAt = now;
    failure.unlogged = 0;
  }

  /** The read of `source` succeeded: a failure that was said is over. */
  succeeded(source: string): void {
    const failure = this.failures.get(source);
    if (failure === undefined) return;
    this.failures.delete(source);
    this.logger.info(
      { source, [this.wording.sinceField]: new Date(failure.since).toISOString() },
      this.wording.over(source),
    );
  }
}

/**
 * A gateway refusing the control plane's key (the internal key revoked by hand, or not yet read by that gateway;
 * control-plane-key.ts): the refusal is said when it starts, then seldom (it fails every sample until the
 * control plane restarts), and once when the key is accepted again.
 */
export class KeyRefusalLog extends LastingFailureLog {
  constructor(logger: Logger, options: LastingFailureLogOptions = {}) {
    super(
      logger,
      {
        still: "still refused",
        sinceField: "refusedSince",
        countField: "refusedReadsSinceLastLine",
        over: (source) => `the gateway accepts the control plane's key again (${source})`,
      },
      options,
    );
  }

  refused(source: string, message: string, error: unknown): void {
    this.failed(source, message, error);
  }

  accepted(source: string): void {
    this.succeeded(source);
  }
}

/** A gateway that cannot be read (down, unreachable, failing): said when it starts, seldom, and when it is over. */
export class GatewayOutageLog extends LastingFailureLog {
  constructor(logger: Logger, options: LastingFailureLogOptions = {}) {
    super(
      logger,
      {
        still: "still failing",
        sinceField: "failingSince",
        countField: "failedReadsSinceLastLine",
        over: (source) => `the gateway can be read again (${source})`,
      },
      options,
    );
  }
}

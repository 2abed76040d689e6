import { ChangeListener, openDatabase, type ChangeTopic, type Database } from "@operon/db";
import type { Logger } from "@operon/gateway/logger";

/**
 * What a `--role gateway` process follows of the control plane's state,
 * kept in PostgreSQL (and, for model files, in the shared model store).
 *
 * How a change arrives: the control plane announces it after it committed
 * (NOTIFY operon_changes '<topic>', packages/db change-channel.ts); this
 * process LISTENs on its own connection and re-reads that part at once
 * (tens of ms). The safety net is a re-read of every part every
 * `resyncSecs` and after every reconnection, for notifications lost while
 * the connection was down (NOTIFY is not queued for absent listeners).
 *
 * When the database is unreachable every part keeps what it read last: the
 * gateway goes on serving those keys, models and operators (a key revoked
 * meanwhile is honoured until the database is back), says so once in its
 * log and in status(), and logs again when it caught up.
 */
export interface SharedPart {
  topic: ChangeTopic;
  /** What the log calls it ("API keys"). */
  what: string;
  /** Re-reads this part and applies it to the gateway; throws when it could not (the gateway keeps the last). */
  refresh(db: Database): Promise<void>;
}

export interface SharedStateOptions {
  /** postgres(ql):// URL of the database the control plane uses. */
  url: string;
  /** In order: a resync refreshes them one after another (keys, then models, then operators that call them). */
  parts: SharedPart[];
  logger: Logger;
  resyncSecs: number;
}

export interface SharedStateStatus {
  /** Every part follows the database right now. */
  current: boolean;
  /** When every part was last read successfully (ISO 8601); undefined before that. */
  readAt: string | undefined;
  /** Why it is not current. */
  problem?: string;
}

/** One part's refreshes, one at a time: calls during a refresh run one more after it, never in parallel. */
class SerialRefresh {
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly run: () => Promise<void>) {}

  request(): Promise<void> {
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.run();
      } while (this.again);
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }
}

export class SharedState {
  private listener: ChangeListener | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly refreshes = new Map<ChangeTopic, SerialRefresh>();
  private readonly failing = new Map<ChangeTopic, string>();
  private readAt: Date | undefined;
  /** The change listener is connected (it starts as if it were, so that a first failure is logged). */
  private listening = true;
  private closed = false;

  private constructor(
    private readonly options: SharedStateOptions,
    private readonly db: Database,
  ) {
    for (const part of options.parts) this.refreshes.set(part.topic, new SerialRefresh(() => this.refreshPart(part)));
  }

  /** Reads every part once (failures are logged, not thrown: the gateway starts and keeps trying), then follows them. */
  static async start(options: SharedStateOptions): Promise<SharedState> {
    const db = await openDatabase({ url: options.url });
    const shared = new SharedState(options, db);
    await shared.resync();
    shared.listener = await ChangeListener.start({
      url: options.url,
      onChange: (topic) => void shared.refreshes.get(topic)?.request(),
      onConnection: (error) => shared.noteConnection(error),
    });
    shared.timer = setInterval(() => void shared.resync(), options.resyncSecs * 1000);
    shared.timer.unref();
    return shared;
  }

  /** Shows this gateway in the control plane's list of gateways (change-channel.ts gatewaySessionName). */
  async showAs(name: string): Promise<void> {
    await this.listener?.setApplicationName(name);
  }

  status(): SharedStateStatus {
    const problems = [...this.failing.values()];
    if (!this.listening) problems.unshift("not connected for change notifications (reconnecting every second)");
    return {
      current: problems.length === 0,
      readAt: this.readAt?.toISOString(),
      ...(problems.length > 0 ? { problem: problems.join("; ") } : {}),
    };
  }

  /** Every part, in order. */
  async resync(): Promise<void> {
    for (const part of this.options.parts) await this.refreshes.get(part.topic)!.request();
    if (this.failing.size === 0) this.readAt = new Date();
  }

  private async refreshPart(part: SharedPart): Promise<void> {
    if (this.closed) return;
    try {
      await part.refresh(this.db);
      if (this.failing.delete(part.topic))
        this.options.logger.info({ part: part.what }, `${part.what} follow the database again`);
    } catch (error) {
      const message = (error as Error).message.split("\n").filter(Boolean).at(-1)?.trim() || String(error);
      if (!this.failing.has(part.topic))
        this.options.logger.warn(
          { err: message, part: part.what, readAt: this.readAt?.toISOString() ?? null },
          `cannot read the ${part.what} from the database: serving with what was read last until it answers`,
        );
      this.failing.set(part.topic, `cannot read the ${part.what}: ${message}`);
    }
  }

  /** Logs the transitions only: a reconnect attempt fails every second while the database is away. */
  private noteConnection(error: Error | undefined): void {
    if (error === undefined) {
      if (!this.listening) this.options.logger.info("change notifications from the database again");
      this.listening = true;
      return;
    }
    if (!this.listening) return;
    this.listening = false;
    this.options.logger.warn(
      { err: error.message, readAt: this.readAt?.toISOString() ?? null },
      "lost the database's change notifications: serving with the API keys, models and operators read last, reconnecting every second",
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.listener?.close();
    await Promise.all([...this.refreshes.values()].map((refresh) => refresh.request().catch(() => undefined)));
    await this.db.close().catch(() => undefined);
  }
}

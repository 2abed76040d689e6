import { readUserGrants } from "@operon/api/api-key-service";
import { ChangeListener, openDatabase, type Database } from "@operon/db";
import type { ApiKeyRing } from "@operon/gateway/auth/api-key-ring";
import type { Logger } from "@operon/gateway/logger";

/**
 * A `--role gateway` process's API keys: the keys the control plane keeps in
 * PostgreSQL, followed into the gateway's ApiKeyRing.
 *
 * How a change arrives: the control plane announces every key change
 * (ApiKeyService.reload → NOTIFY operon_changes 'api-keys'); this process
 * LISTENs on its own connection and re-reads the whole set at once (tens of
 * ms). The safety net is a full re-read every `resyncSecs` and after every
 * reconnection, for notifications lost while the connection was down.
 *
 * When the database is unreachable the ring keeps the last set it read: the
 * gateway goes on serving those keys (a key revoked meanwhile is honoured
 * until the database is back) and says so once in its log, and in
 * status() for its readiness detail; it logs again when it catches up.
 */
export interface SharedApiKeysOptions {
  /** postgres(ql):// URL of the database the control plane uses. */
  url: string;
  ring: ApiKeyRing;
  logger: Logger;
  resyncSecs: number;
}

export interface SharedApiKeysStatus {
  /** The keys follow the database right now. */
  current: boolean;
  /** When the keys served were last read (ISO 8601); undefined before the first read. */
  readAt: string | undefined;
  keys: number;
  /** Why they are not current. */
  problem?: string;
}

export class SharedApiKeys {
  private listener: ChangeListener | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private readAgain = false;
  private readAt: Date | undefined;
  private keys = 0;
  private problem: string | undefined = "not read yet";
  private closed = false;
  /** The change listener is connected (it starts as if it were, so that a first failure is logged). */
  private listening = true;

  private constructor(
    private readonly options: SharedApiKeysOptions,
    private readonly db: Database,
  ) {}

  /** Reads the keys once (a failure is logged, not thrown: the gateway starts and keeps trying), then follows them. */
  static async start(options: SharedApiKeysOptions): Promise<SharedApiKeys> {
    const db = await openDatabase({ url: options.url });
    const shared = new SharedApiKeys(options, db);
    await shared.refresh();
    shared.listener = await ChangeListener.start({
      url: options.url,
      onChange: () => void shared.refresh(),
      onConnection: (error) => shared.noteConnection(error),
    });
    shared.timer = setInterval(() => void shared.refresh(), options.resyncSecs * 1000);
    shared.timer.unref();
    return shared;
  }

  status(): SharedApiKeysStatus {
    return {
      current: this.problem === undefined,
      readAt: this.readAt?.toISOString(),
      keys: this.keys,
      ...(this.problem !== undefined ? { problem: this.problem } : {}),
    };
  }

  /** Re-reads the keys; calls that arrive during a read run one more read after it, never in parallel. */
  refresh(): Promise<void> {
    if (this.reading !== undefined) {
      this.readAgain = true;
      return this.reading;
    }
    this.reading = (async () => {
      do {
        this.readAgain = false;
        await this.readOnce();
      } while (this.readAgain && !this.closed);
    })().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async readOnce(): Promise<void> {
    if (this.closed) return;
    try {
      const read = await readUserGrants(this.db.prisma);
      if (read.everIssued) this.options.ring.noteKeysEverIssued();
      this.options.ring.replaceAll(read.grants);
      const wasStale = this.problem !== undefined && this.readAt !== undefined;
      this.readAt = new Date();
      this.keys = read.grants.length;
      this.problem = undefined;
      if (wasStale) this.options.logger.info({ keys: this.keys }, "API keys follow the database again");
    } catch (error) {
      const message = (error as Error).message.split("\n").at(-1)?.trim() || String(error);
      const first = this.problem === undefined || this.readAt === undefined;
      this.problem = `cannot read the API keys from the database: ${message}`;
      if (first)
        this.options.logger.warn(
          { err: message, keys: this.keys, readAt: this.readAt?.toISOString() ?? null },
          this.readAt === undefined
            ? "cannot read the API keys from the database: serving without keys until it answers"
            : "cannot read the API keys from the database: serving with the keys read last until it answers",
        );
    }
  }

  /** Logs the transitions only: a reconnect attempt fails every second while the database is away. */
  private noteConnection(error: Error | undefined): void {
    if (error === undefined) {
      this.listening = true;
      return;
    }
    this.problem ??= `lost the database's change notifications: ${error.message}`;
    if (!this.listening) return;
    this.listening = false;
    this.options.logger.warn(
      { err: error.message, keys: this.keys, readAt: this.readAt?.toISOString() ?? null },
      "lost the database's change notifications: serving with the keys read last, reconnecting every second",
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.listener?.close();
    await this.reading?.catch(() => undefined);
    await this.db.close().catch(() => undefined);
  }
}

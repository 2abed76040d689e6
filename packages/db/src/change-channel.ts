// Changes to shared state, announced from the process that made them to every
// process on the same PostgreSQL (issue 23: one control plane, N gateways).
//
// The contract is "something of this topic changed: re-read it", never the
// change itself: a notification carries only the topic, so a process that
// missed one (it was disconnected, NOTIFY is not queued for absent listeners)
// converges by re-reading, which is also what its periodic resync does.
import pg from "pg";
import type { PrismaClient } from "./generated/prisma/client.js";

export const CHANGE_CHANNEL = "operon_changes";

/** What changed: API keys (and what decides their grants: owners, roles, tenants). */
export type ChangeTopic = "api-keys";

const TOPICS: readonly ChangeTopic[] = ["api-keys"];

/**
 * Tells every listening process that `topic` changed. On the embedded
 * database this reaches no one (it is one process) and costs one statement.
 * Call it after the change committed: a listener that re-reads at once must
 * see it.
 */
export async function announceChange(prisma: PrismaClient, topic: ChangeTopic): Promise<void> {
  await prisma.$executeRaw`SELECT pg_notify(${CHANGE_CHANNEL}, ${topic})`;
}

export interface ChangeListenerOptions {
  /** postgres(ql):// URL; LISTEN needs a connection of its own, outside Prisma's pool. */
  url: string;
  /** A topic changed (or may have: after a reconnect every topic is reported once). */
  onChange(topic: ChangeTopic): void;
  /** The connection was lost (error) or is back (undefined); the listener reconnects by itself. */
  onConnection?(error: Error | undefined): void;
  /** Wait between reconnect attempts; default 1000 ms. */
  reconnectMs?: number;
}

/**
 * LISTENs on CHANGE_CHANNEL over one dedicated connection, reconnecting
 * every reconnectMs while the database is unreachable. After each
 * (re)connection every topic is reported changed, since notifications sent
 * while it was away are lost.
 */
export class ChangeListener {
  private client: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private connected = false;

  private constructor(private readonly options: ChangeListenerOptions) {}

  /** Starts listening; resolves once the first attempt connected or failed (it then keeps retrying). */
  static async start(options: ChangeListenerOptions): Promise<ChangeListener> {
    const listener = new ChangeListener(options);
    await listener.connect();
    return listener;
  }

  isConnected(): boolean {
    return this.connected;
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.options.url, connectionTimeoutMillis: 5000 });
    client.on("notification", (message) => {
      if (message.channel !== CHANGE_CHANNEL) return;
      const topic = TOPICS.find((known) => known === message.payload);
      if (topic !== undefined) this.options.onChange(topic);
    });
    client.on("error", (error) => this.lost(client, error));
    client.on("end", () => this.lost(client, new Error("the database closed the connection")));
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
    } catch (error) {
      this.lost(client, error as Error);
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.connected = true;
    this.options.onConnection?.(undefined);
    for (const topic of TOPICS) this.options.onChange(topic);
  }

  private lost(client: pg.Client, error: Error): void {
    if (this.client !== client || this.closed) return;
    this.client = undefined;
    this.connected = false;
    client.removeAllListeners("end");
    client.on("error", () => undefined);
    client.end().catch(() => undefined);
    this.options.onConnection?.(error);
    this.timer = setTimeout(() => void this.connect(), this.options.reconnectMs ?? 1000);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    this.connected = false;
    if (client !== undefined) {
      client.removeAllListeners("end");
      client.on("error", () => undefined);
      await client.end().catch(() => undefined);
    }
  }
}

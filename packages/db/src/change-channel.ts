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

/**
 * What changed: API keys (and what decides their grants: owners, roles, tenants); the models in the
 * model store (uploads, versions, configs, deletions); the registered operators.
 */
export type ChangeTopic = "api-keys" | "models" | "operators";

const TOPICS: readonly ChangeTopic[] = ["api-keys", "models", "operators"];

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
 * Gateways show themselves to the control plane through their listening
 * connection: its application_name is `operon-gateway <http port>/<metrics
 * port, or - without metrics> <host>` (the control plane's usage sampler reads
 * both ports at the address the database sees the connection come from),
 * so the database's own session list (pg_stat_activity) is the list of
 * running gateways, and a gateway that dies (its socket closes) leaves it
 * at once. PostgreSQL keeps 63 bytes of the name: the host is cut to fit.
 */
export const GATEWAY_SESSION_PREFIX = "operon-gateway ";

export function gatewaySessionName(httpPort: number, host: string, metricsPort?: number): string {
  const head = `${GATEWAY_SESSION_PREFIX}${httpPort}/${metricsPort ?? "-"} `;
  return head + host.replace(/[^\x21-\x7e]/g, "?").slice(0, 63 - head.length);
}

export interface GatewaySession {
  host: string;
  httpPort: number;
  /** Its Prometheus metrics port; null when it serves no metrics. */
  metricsPort: number | null;
  /** The gateway's address as the database sees it (null over a Unix socket). */
  address: string | null;
  /** When its current connection began. */
  since: Date;
}

/** The gateways connected to this database now (empty on the embedded database, which has no sessions). */
export async function connectedGateways(prisma: PrismaClient): Promise<GatewaySession[]> {
  let rows: Array<{ application_name: string; client_addr: string | null; backend_start: Date }>;
  try {
    rows = await prisma.$queryRaw`SELECT application_name, host(client_addr) AS client_addr, backend_start
      FROM pg_stat_activity
      WHERE datname = current_database() AND starts_with(application_name, ${GATEWAY_SESSION_PREFIX})
      ORDER BY backend_start`;
  } catch {
    return [];
  }
  return rows.map((row) => {
    const [ports = "0", ...host] = row.application_name.slice(GATEWAY_SESSION_PREFIX.length).split(" ");
    const [http = "0", metrics = "-"] = ports.split("/");
    return {
      host: host.join(" "),
      httpPort: Number(http),
      metricsPort: /^\d+$/.test(metrics) ? Number(metrics) : null,
      address: row.client_addr,
      since: row.backend_start,
    };
  });
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
  private applicationName: string | undefined;

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

  /** Names this listener's connection (gatewaySessionName), now and after every reconnection. */
  async setApplicationName(name: string): Promise<void> {
    this.applicationName = name;
    await this.client?.query("SELECT set_config('application_name', $1, false)", [name]).catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.options.url,
      connectionTimeoutMillis: 5000,
      ...(this.applicationName !== undefined ? { application_name: this.applicationName } : {}),
    });
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

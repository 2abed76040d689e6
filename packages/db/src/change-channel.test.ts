import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  announceChange,
  ChangeListener,
  connectedGateways,
  gatewaySessionName,
  type ChangeTopic,
} from "./change-channel.js";
import { openDatabase, type Database } from "./database.js";
import { createTestPostgresDatabase, TEST_POSTGRES_ADMIN_URL } from "./testing/test-databases.js";

// The change channel between the processes on one PostgreSQL: what one announces, the others hear;
// a listener that lost its connection reconnects and reports every topic (what it may have missed).
describe("change channel on PostgreSQL", () => {
  let database: { url: string; drop(): Promise<void> };
  let db: Database;
  const listeners: ChangeListener[] = [];

  beforeAll(async () => {
    database = await createTestPostgresDatabase();
    db = await openDatabase({ url: database.url });
  });
  afterAll(async () => {
    for (const listener of listeners) await listener.close();
    await db?.close();
    await database?.drop();
  });

  function listen(): { heard: ChangeTopic[]; connections: Array<string | undefined>; ready: Promise<ChangeListener> } {
    const heard: ChangeTopic[] = [];
    const connections: Array<string | undefined> = [];
    const ready = ChangeListener.start({
      url: database.url,
      onChange: (topic) => heard.push(topic),
      onConnection: (error) => connections.push(error?.message),
      reconnectMs: 100,
    }).then((listener) => {
      listeners.push(listener);
      return listener;
    });
    return { heard, connections, ready };
  }

  async function until(check: () => boolean, what: string, refresh?: () => Promise<void>): Promise<void> {
    const deadline = Date.now() + 5000;
    await refresh?.();
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolveWait) => setTimeout(resolveWait, 20));
      await refresh?.();
    }
  }

  it("lists the connected gateways with their HTTP and metrics ports (issue 23: the usage sampler reads both)", async () => {
    const withMetrics = await listen().ready;
    const without = await listen().ready;
    await withMetrics.setApplicationName(gatewaySessionName(8000, "node-a", 8002));
    await without.setApplicationName(gatewaySessionName(9000, "node b"));
    let found: Awaited<ReturnType<typeof connectedGateways>> = [];
    await until(
      () => found.length === 2,
      "both gateways listed",
      async () => {
        found = await connectedGateways(db.prisma);
      },
    );
    expect(found.map(({ host, httpPort, metricsPort }) => ({ host, httpPort, metricsPort }))).toEqual(
      expect.arrayContaining([
        { host: "node-a", httpPort: 8000, metricsPort: 8002 },
        // A space would split the name: it is replaced, as any character outside printable ASCII.
        { host: "node?b", httpPort: 9000, metricsPort: null },
      ]),
    );
    for (const gateway of found) expect(gateway.address).toBe("127.0.0.1");
  });

  it("reports every topic once connected, then each announced change", async () => {
    const one = listen();
    const two = listen();
    await Promise.all([one.ready, two.ready]);
    expect(one.heard).toEqual(["api-keys", "models", "operators"]); // the (re)connection: anything may have changed
    await announceChange(db.prisma, "operators");
    await until(() => one.heard.length === 4 && two.heard.length === 4, "both listeners to hear the change");
    expect(one.heard.at(-1)).toBe("operators");
    expect(one.connections).toEqual([undefined]);
  });

  it("reconnects after losing its connection and reports every topic again", async () => {
    const watched = listen();
    const listener = await watched.ready;
    const admin = new pg.Client({ connectionString: TEST_POSTGRES_ADMIN_URL });
    await admin.connect();
    try {
      // Every connection to this database but Prisma's pool in use: the listeners' are the LISTENing ones.
      await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND query ILIKE 'LISTEN%'",
        [new URL(database.url).pathname.slice(1)],
      );
    } finally {
      await admin.end();
    }
    await until(() => watched.connections.some((message) => message !== undefined), "the loss to be reported");
    await until(() => listener.isConnected() && watched.heard.length === 6, "the reconnection");
    expect(watched.heard).toEqual(["api-keys", "models", "operators", "api-keys", "models", "operators"]);
  });

  it("ignores payloads it does not know", async () => {
    const watched = listen();
    await watched.ready;
    await db.prisma.$executeRaw`SELECT pg_notify('operon_changes', 'something-else')`;
    await announceChange(db.prisma, "api-keys");
    await until(() => watched.heard.length === 4, "the known change");
    expect(watched.heard.at(-1)).toBe("api-keys");
  });
});

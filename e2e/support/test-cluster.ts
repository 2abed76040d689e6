import { randomBytes } from "node:crypto";
import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPostgresDatabase } from "@operon/db/testing/postgres-template";
import pg from "pg";
import { TEST_ADMIN } from "./control-plane-server.js";
import { EXAMPLE_REPOSITORY, startOperon, type RunningOperon } from "./operon-process.js";

/** The PostgreSQL the cluster tests create their databases on (trust auth on these machines). */
export const PG_ADMIN_URL = process.env.OPERON_TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/test";

/** Runs one statement on `url` with a connection of its own. */
export async function sql<T extends pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/**
 * One control plane and two gateways (`--role control-plane|gateway`) on a
 * database of their own, serving a model store that holds add_sub (the
 * shared volume of a Kubernetes deployment). The gateways require API keys.
 * `gateways` may be replaced by the test (a gateway killed, one started);
 * `stop` stops whatever runs then and drops the database.
 */
export interface TestCluster {
  /** The database's name and URL. */
  name: string;
  url: string;
  store: string;
  controlPlane: RunningOperon;
  gateways: RunningOperon[];
  /** The flags a gateway of this cluster starts with. */
  gatewayArgs(): string[];
  stop(): Promise<void>;
}

export async function startTestCluster(options: {
  /** The database's name starts with it (a random suffix follows). */
  prefix: string;
  /** Flags added to the control plane's. */
  controlPlaneArgs?: string[];
  /** Adds models to the store (beside add_sub) before anything serves it. */
  prepareStore?: (store: string) => void;
  /**
   * false: the database starts empty and the control plane's first start migrates it. By default it is a
   * copy of the run's migrated template (packages/db/src/testing/postgres-template.ts), as the control plane
   * leaves it after its first start, and that start only checks the migrations.
   */
  migrated?: boolean;
}): Promise<TestCluster> {
  const name = `${options.prefix}_${randomBytes(5).toString("hex")}`;
  const store = mkdtempSync(join(tmpdir(), `${options.prefix}-store-`));
  cpSync(join(EXAMPLE_REPOSITORY, "add_sub"), join(store, "add_sub"), { recursive: true });
  options.prepareStore?.(store);
  const url = await createPostgresDatabase(PG_ADMIN_URL, name, { migrated: options.migrated ?? true });
  const served = ["--model-repository", store, "--model-control-mode", "explicit", "--load-model", "*"];
  const cluster: TestCluster = {
    name,
    url,
    store,
    controlPlane: undefined as unknown as RunningOperon,
    gateways: [],
    gatewayArgs: () => ["--role", "gateway", "--database-url", url, ...served, "--require-api-key"],
    async stop() {
      await Promise.all([...cluster.gateways, cluster.controlPlane].filter(Boolean).map((server) => server.stop()));
      await sql(PG_ADMIN_URL, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
  cluster.controlPlane = await startOperon(
    [
      ...["--role", "control-plane", "--control-plane", "--console=false", "--api-port", "0"],
      ...["--database-url", url, ...served, "--model-store", store, "--admin-email", TEST_ADMIN.email],
      ...(options.controlPlaneArgs ?? []),
    ],
    // Generous: a loaded CI machine has taken over 60 s to migrate a fresh database and start.
    { env: { OPERON_ADMIN_PASSWORD: TEST_ADMIN.password }, timeoutMs: 150_000 },
  );
  cluster.gateways = await Promise.all([
    startOperon(cluster.gatewayArgs(), { timeoutMs: 120_000 }),
    startOperon(cluster.gatewayArgs(), { timeoutMs: 120_000 }),
  ]);
  return cluster;
}

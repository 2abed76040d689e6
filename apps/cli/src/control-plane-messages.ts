import type { ResourceSchedulerOptions } from "@operon/api";
import type { ModelControlEvent } from "@operon/gateway/server";
import type { ApiKeyGrant } from "@operon/protocol/api-keys";

/**
 * Messages between `operon serve`'s main thread (the gateway) and the
 * control plane's thread (control-plane-thread.ts). The control plane
 * (database, API, usage sampler, perf runs) has its own event loop: a slow
 * query, a migration or a perf run's bookkeeping never delays inference.
 * It reaches the gateway only as any client would (its HTTP admin API, the
 * metrics endpoint) plus the key ring that these messages keep current.
 */
export interface ControlPlaneThreadOptions {
  databaseUrl: string;
  dataDir: string;
  /** --model-store: where uploads go (default <data-dir>/models). */
  modelStore?: string;
  adminEmail?: string;
  adminPassword?: string;
  /** The control plane's own admin key (memory only) and its grant, which the gateway adds to the ring. */
  internal: { key: string; grant: ApiKeyGrant };
  maxUploadBytes: number;
  usageSampleIntervalSecs: number;
  usageRetentionDays: number;
  /** --resource-scheduler and --scheduler-* flags. */
  resourceScheduler?: Partial<ResourceSchedulerOptions>;
  /** --batch-data-root (empty: <data-dir>/datasets), --batch-postgres, --batch-budget-ms, --batch-window-ms, --batch-sample-ms, --batch-lane-refresh-ms and --batch-rows-per-request. */
  batch?: {
    serverPathRoots: string[];
    postgresConnections?: Record<string, string>;
    budgetMs?: number;
    windowMs?: number;
    sampleMs?: number;
    laneRefreshMs?: number;
    rowsPerRequest?: number;
  };
  /** --secure-cookies */
  secureCookies: boolean;
  apiAddress: string;
  apiPort: number;
  logVerbose: number;
  /** The JSON log's file (log-file.ts); undefined = stdout. */
  logFile: string | undefined;
}

export type ToControlPlane =
  | { type: "gateway"; httpUrl: string; metricsUrl: string | undefined }
  /** Last-used times the gateway gathered (key id -> epoch ms), to be written to the database. */
  | { type: "key-usage"; used: Array<[string, number]> }
  /** A load/unload/operator change made through the gateway's own API, for the audit log. */
  | { type: "model-control"; event: ModelControlEvent }
  | { type: "stop" };

export type FromControlPlane =
  /** The database is open and migrated; the stored keys (sent again on every change). */
  | {
      type: "keys";
      grants: ApiKeyGrant[];
      everIssued: boolean;
      database: string;
      embedded: boolean;
      appliedMigrations: number;
    }
  | { type: "started"; apiUrl: string; proxyToken: string; setupToken: string | undefined }
  /** The resource scheduler's desired gateway replica count, for the gateway's metrics endpoint (a gauge). */
  | { type: "desired-gateway-replicas"; replicas: number }
  | { type: "failed"; message: string }
  | { type: "stopped" };

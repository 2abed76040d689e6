import { createHash, randomBytes } from "node:crypto";

/**
 * Gateway API keys: the format and the hash shared by the control plane
 * (which issues keys and stores only their hash) and the gateway (which
 * checks `Authorization: Bearer <key>` against the hashes it was given).
 *
 * A key reads `opk_<prefix>_<secret>`: the prefix (8 base32 characters) is
 * shown in listings so people can tell keys apart; the secret carries 192
 * random bits. Keys are hashed with plain SHA-256: they are long random
 * values, not passwords, so a slow hash would add nothing but latency on
 * every request.
 */
export const API_KEY_SCOPES = ["infer", "admin"] as const;
/** infer: inference and model metadata; admin: also model control (load, unload, upload, operators). */
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

const KEY_PATTERN = /^opk_([a-z2-7]{8})_([A-Za-z0-9_-]{32})$/;

export interface GeneratedApiKey {
  /** The whole key: shown to its owner once, never stored. */
  key: string;
  prefix: string;
  hash: string;
}

export function generateApiKey(): GeneratedApiKey {
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  const prefix = Array.from(randomBytes(8), (byte) => alphabet[byte % 32]).join("");
  const key = `opk_${prefix}_${randomBytes(24).toString("base64url")}`;
  return { key, prefix, hash: hashApiKey(key) };
}

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** The listing prefix of a well-formed key, undefined for anything else. */
export function apiKeyPrefixOf(key: string): string | undefined {
  return KEY_PATTERN.exec(key)?.[1];
}

/**
 * What the gateway knows of one key: enough to authorize a request without
 * reading the database on the request path.
 */
export interface ApiKeyGrant {
  id: string;
  hash: string;
  scopes: ApiKeyScope[];
  /** Priority given to requests that do not set one (0 = the model's default). */
  priorityLevel: number;
  /** Requests per second allowed; null = unlimited. */
  qpsQuota: number | null;
  /** Epoch milliseconds; null = never expires. */
  expiresAt: number | null;
  /**
   * The control plane's own key (made at each start; only its hash is stored,
   * for the cluster's gateways), or a batch job's. It does not
   * count as a configured key: a loopback gateway with only internal keys
   * keeps model control open, as Triton does.
   */
  internal?: boolean;
  /**
   * A running batch job's key (internal too): its requests are not online
   * traffic, so the gateway leaves them out of online_latency, which the job
   * reads to back off (online-latency.ts).
   */
  batchJob?: boolean;
  /**
   * The key's tenant for traffic shares (see the gateway's
   * admission/tenant-shares.ts). Absent on every grant while no tenant
   * shares are configured: the gateway then schedules no tenants at all.
   */
  tenant?: TenantGrant;
}

/** What a tenant policy does with a request over its share while its model is contended. */
export const TENANT_POLICIES = ["queue", "refuse"] as const;
/** queue: waits behind the tenants within their share; refuse: 429 / RESOURCE_EXHAUSTED with a retry hint. */
export type TenantPolicy = (typeof TENANT_POLICIES)[number];

/** A tenant as the gateway needs it: every grant of one tenant carries the same values. */
export interface TenantGrant {
  /** Stable id (a TenantGroup id, or `user:<user id>` for a key's owner). */
  id: string;
  /** Weight of the tenant's share of capacity (2 gets twice what 1 gets under contention). */
  share: number;
  policy: TenantPolicy;
}

/** The tenant of requests without a key (anonymous or loopback callers). */
export const ANONYMOUS_TENANT: TenantGrant = { id: "anonymous", share: 1, policy: "queue" };

/** The control plane's internal key (@operon/api control-plane-key.ts stores its hash for every gateway of a cluster). */
export const CONTROL_PLANE_KEY_ID = "control-plane";

/** The grant every gateway holds for the control plane's key: admin and infer, internal (does not lock model control). */
export function controlPlaneGrant(hash: string): ApiKeyGrant {
  return {
    id: CONTROL_PLANE_KEY_ID,
    hash,
    scopes: ["admin", "infer"],
    priorityLevel: 0,
    qpsQuota: null,
    expiresAt: null,
    internal: true,
  };
}

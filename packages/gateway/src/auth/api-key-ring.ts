import {
  API_KEY_SCOPES,
  TENANT_POLICIES,
  type ApiKeyGrant,
  type TenantGrant,
  hashApiKey,
} from "@operon/protocol/api-keys";
import { OperonError } from "@operon/protocol/errors";

/**
 * The gateway's in-memory set of valid API keys, as the control plane last
 * gave them (replaceAll). The request path only reads memory: a key is
 * found by the SHA-256 of the presented token, its quota is a token bucket
 * here, and its last use is noted here for the control plane to persist
 * later (drainUsage), off the request path.
 *
 * Contract for the owner (the CLI): call replaceAll with the complete set
 * whenever it changes; a key left out is revoked at once, also for streams
 * already open (they look their key up again per request).
 */
export interface ApiKeyRingOptions {
  /** Clock, epoch milliseconds (tests pass their own). */
  now?: () => number;
}

interface Bucket {
  capacity: number;
  tokens: number;
  refilledAt: number;
}

const HASH_PATTERN = /^[0-9a-f]{64}$/;

export class ApiKeyRing {
  private byHash = new Map<string, ApiKeyGrant>();
  private byId = new Map<string, ApiKeyGrant>();
  private userAdminKeys = false;
  /** Sticky: once a user key was held (or the control plane says one was ever issued), model control stays locked. */
  private keysEverIssued = false;
  /** Quota buckets by key id; kept across replaceAll for keys still present, so a refresh does not refill them. */
  private readonly buckets = new Map<string, Bucket>();
  private usage = new Map<string, number>();
  private readonly now: () => number;
  private tenantList: TenantGrant[] = [];
  private readonly tenantListeners = new Set<(tenants: readonly TenantGrant[]) => void>();

  constructor(grants: readonly ApiKeyGrant[] = [], options: ApiKeyRingOptions = {}) {
    this.now = options.now ?? Date.now;
    this.replaceAll(grants);
  }

  /**
   * Replaces every grant at once. Throws INVALID_ARG naming the first
   * malformed grant, and then keeps the previous set unchanged.
   */
  replaceAll(grants: readonly ApiKeyGrant[]): void {
    const byHash = new Map<string, ApiKeyGrant>();
    const byId = new Map<string, ApiKeyGrant>();
    const tenants = new Map<string, TenantGrant>();
    for (const [index, grant] of grants.entries()) {
      checkGrant(grant, index);
      if (grant.tenant !== undefined) {
        const seen = tenants.get(grant.tenant.id);
        if (seen !== undefined && (seen.share !== grant.tenant.share || seen.policy !== grant.tenant.policy)) {
          throw new OperonError(
            "INVALID_ARG",
            `API key grant ${index} ('${grant.id}'): tenant '${grant.tenant.id}' has another share or policy on an earlier grant`,
          );
        }
        tenants.set(grant.tenant.id, { ...grant.tenant });
      }
      if (byId.has(grant.id)) throw new OperonError("INVALID_ARG", `API key grants: id '${grant.id}' appears twice`);
      if (byHash.has(grant.hash))
        throw new OperonError(
          "INVALID_ARG",
          `API key grants: keys '${byHash.get(grant.hash)!.id}' and '${grant.id}' have the same hash`,
        );
      const copy: ApiKeyGrant = { ...grant, scopes: [...grant.scopes] };
      byHash.set(copy.hash, copy);
      byId.set(copy.id, copy);
    }
    this.byHash = byHash;
    this.byId = byId;
    // Expired user admin keys count too: a key that lapses must not quietly reopen model control.
    this.userAdminKeys = [...byId.values()].some((grant) => grant.internal !== true && grant.scopes.includes("admin"));
    if ([...byId.values()].some((grant) => grant.internal !== true)) this.keysEverIssued = true;
    for (const id of [...this.buckets.keys()]) if (!byId.has(id)) this.buckets.delete(id);
    this.tenantList = [...tenants.values()];
    for (const listener of this.tenantListeners) listener(this.tenantList);
  }

  /**
   * Calls `listener` with the tenants the grants name (each once), now and
   * after every replaceAll; empty while no grant has a tenant. Returns the
   * unsubscribe.
   */
  onTenants(listener: (tenants: readonly TenantGrant[]) => void): () => void {
    this.tenantListeners.add(listener);
    listener(this.tenantList);
    return () => this.tenantListeners.delete(listener);
  }

  /** Grants held now (expired ones included). */
  get size(): number {
    return this.byId.size;
  }

  /** The grant of a presented key; undefined when unknown or expired. */
  lookup(bearerToken: string): ApiKeyGrant | undefined {
    const grant = this.byHash.get(hashApiKey(bearerToken));
    return grant !== undefined && !this.isExpired(grant) ? grant : undefined;
  }

  /** The grant with this id, while it is held and not expired (streams re-check their key with it). */
  grantById(id: string): ApiKeyGrant | undefined {
    const grant = this.byId.get(id);
    return grant !== undefined && !this.isExpired(grant) ? grant : undefined;
  }

  /** True when a key the user made (not the control plane's internal one) has the admin scope. */
  hasUserAdminKeys(): boolean {
    return this.userAdminKeys;
  }

  /**
   * The control plane's word that some user key was issued at some time
   * (revoked and expired ones included; the key table keeps their rows).
   * Never undone: a key that lapses must not reopen model control.
   */
  noteKeysEverIssued(): void {
    this.keysEverIssued = true;
  }

  /** True once any user key has existed: model control then needs an admin key, even on loopback. */
  modelControlLocked(): boolean {
    return this.keysEverIssued || this.userAdminKeys;
  }

  /** Notes that a key was used now. */
  recordUse(grantId: string): void {
    this.usage.set(grantId, this.now());
  }

  /** Last-use times (epoch ms) noted since the previous drain, by key id; the ring forgets them. */
  drainUsage(): Map<string, number> {
    const drained = this.usage;
    this.usage = new Map();
    return drained;
  }

  /**
   * Takes one request from the key's token bucket: false when the key is
   * over its quota. The bucket holds qpsQuota requests (at least one, so a
   * quota below 1/s still lets a request through now and then) and refills
   * at qpsQuota per second; a new key starts full. null quota = unlimited.
   */
  takeQuota(grant: ApiKeyGrant): boolean {
    const rate = grant.qpsQuota;
    if (rate === null) return true;
    const now = this.now();
    const capacity = Math.max(1, rate);
    let bucket = this.buckets.get(grant.id);
    if (bucket === undefined) {
      bucket = { capacity, tokens: capacity, refilledAt: now };
      this.buckets.set(grant.id, bucket);
    }
    if (bucket.capacity !== capacity) bucket.capacity = capacity; // the quota changed in a replaceAll
    const elapsedSecs = Math.max(0, now - bucket.refilledAt) / 1000;
    bucket.tokens = Math.min(bucket.capacity, bucket.tokens + elapsedSecs * rate);
    bucket.refilledAt = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  private isExpired(grant: ApiKeyGrant): boolean {
    return grant.expiresAt !== null && grant.expiresAt <= this.now();
  }
}

function checkGrant(grant: ApiKeyGrant, index: number): void {
  const fail = (problem: string): never => {
    const id = typeof grant?.id === "string" && grant.id !== "" ? ` ('${grant.id}')` : "";
    throw new OperonError("INVALID_ARG", `API key grant ${index}${id}: ${problem}`);
  };
  if (grant === null || typeof grant !== "object") fail("must be an object");
  if (typeof grant.id !== "string" || grant.id === "") fail("id must be a non-empty string");
  if (typeof grant.hash !== "string" || !HASH_PATTERN.test(grant.hash))
    fail("hash must be the key's SHA-256 as 64 lowercase hex digits (hashApiKey)");
  if (
    !Array.isArray(grant.scopes) ||
    grant.scopes.some((scope) => !(API_KEY_SCOPES as readonly string[]).includes(scope))
  ) {
    fail(`scopes must be a list of ${API_KEY_SCOPES.map((scope) => `'${scope}'`).join(", ")}`);
  }
  if (!Number.isSafeInteger(grant.priorityLevel) || grant.priorityLevel < 0)
    fail("priorityLevel must be an integer >= 0");
  if (
    grant.qpsQuota !== null &&
    !(typeof grant.qpsQuota === "number" && Number.isFinite(grant.qpsQuota) && grant.qpsQuota > 0)
  ) {
    fail("qpsQuota must be a number of requests per second > 0, or null for unlimited");
  }
  if (grant.expiresAt !== null && !(typeof grant.expiresAt === "number" && Number.isFinite(grant.expiresAt))) {
    fail("expiresAt must be epoch milliseconds or null");
  }
  const tenant = grant.tenant;
  if (tenant !== undefined) {
    if (tenant === null || typeof tenant !== "object") fail("tenant must be an object or absent");
    if (typeof tenant.id !== "string" || tenant.id === "" || tenant.id.length > 200)
      fail("tenant.id must be a non-empty string of at most 200 characters");
    if (
      !(
        typeof tenant.share === "number" &&
        Number.isFinite(tenant.share) &&
        tenant.share > 0 &&
        tenant.share <= 1_000_000
      )
    )
      fail("tenant.share must be a number > 0 and <= 1000000");
    if (!(TENANT_POLICIES as readonly string[]).includes(tenant.policy))
      fail(`tenant.policy must be one of ${TENANT_POLICIES.map((policy) => `'${policy}'`).join(", ")}`);
  }
}

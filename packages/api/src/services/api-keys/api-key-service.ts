import { API_KEY_SCOPES, generateApiKey, type ApiKeyGrant, type ApiKeyScope } from "@operon/protocol/api-keys";
import { tenantOfKey } from "../tenants/tenant-of-key.js";
import { announceChange, type ApiKey, type PrismaClient, type Role } from "@operon/db";
import { AppError, notFound } from "../../app-error.js";
import { recordAudit, type Actor } from "../audit/audit-log.js";

/**
 * Issues and revokes gateway API keys and keeps the set of valid keys
 * (grants) that the gateway checks requests against. The database keeps
 * only hashes; the key itself is returned once, from create().
 *
 * Listeners get the whole current set after every change (and once on
 * subscribe), so a gateway that missed an update still converges.
 */
export type GrantsListener = (grants: ApiKeyGrant[]) => void;

export interface CreateApiKeyInput {
  name: string;
  scopes: ApiKeyScope[];
  expiresAt?: Date | null;
  priorityLevel?: number;
  qpsQuota?: number | null;
}

/** A key as listings show it: never the hash, never the key. */
export interface ApiKeySummary {
  id: string;
  name: string;
  prefix: string;
  scopes: ApiKeyScope[];
  ownerId: string;
  ownerEmail?: string;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  priorityLevel: number;
  qpsQuota: number | null;
  /** The tenant group the key's traffic counts for; null: its owner. */
  tenantGroupId: string | null;
  createdAt: Date;
}

export function summarizeApiKey(key: ApiKey & { owner?: { email: string } }): ApiKeySummary {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes.filter((scope): scope is ApiKeyScope => (API_KEY_SCOPES as readonly string[]).includes(scope)),
    ownerId: key.ownerId,
    ...(key.owner ? { ownerEmail: key.owner.email } : {}),
    expiresAt: key.expiresAt,
    lastUsedAt: key.lastUsedAt,
    revokedAt: key.revokedAt,
    priorityLevel: key.priorityLevel,
    qpsQuota: key.qpsQuota,
    tenantGroupId: key.tenantGroupId,
    createdAt: key.createdAt,
  };
}

/**
 * The scopes a key may use while its owner holds a role: a key never does
 * more than its owner could. Admins: admin and infer; engineers: infer;
 * viewers: none (they cannot make keys, so their keys date from an earlier
 * role and stop working). The gateway gets each key's stored scopes cut to
 * this set at every reload, so a role change takes effect at once, and is
 * undone by giving the role back.
 */
export const SCOPES_BY_ROLE: Record<Role, readonly ApiKeyScope[]> = {
  ADMIN: ["admin", "infer"],
  ENGINEER: ["infer"],
  VIEWER: [],
};

export class ApiKeyService {
  private readonly listeners = new Set<GrantsListener>();
  private grants: ApiKeyGrant[] = [];
  private userGrants: ApiKeyGrant[] = [];
  /** Grants of running batch jobs (services/batch): in memory only, one key and tenant per job. */
  private readonly jobGrants = new Map<string, ApiKeyGrant>();
  private sharesOn = false;
  private everIssued = false;

  private constructor(private readonly prisma: PrismaClient) {}

  static async create(prisma: PrismaClient): Promise<ApiKeyService> {
    const service = new ApiKeyService(prisma);
    await service.reload();
    return service;
  }

  currentGrants(): ApiKeyGrant[] {
    return this.grants;
  }

  /**
   * True once any key was ever issued: revoked and expired keys keep their
   * rows, so the key table itself is the persisted fact. The gateway keeps
   * model control locked from then on (ApiKeyRing.noteKeysEverIssued).
   */
  keysEverIssued(): boolean {
    return this.everIssued;
  }

  subscribe(listener: GrantsListener): () => void {
    this.listeners.add(listener);
    listener(this.grants);
    return () => this.listeners.delete(listener);
  }

  /**
   * Re-reads the valid keys from the database, tells the listeners, and
   * announces the change to the other processes on the database (gateways
   * started with --role gateway re-read it with readUserGrants).
   */
  async reload(): Promise<void> {
    const read = await readUserGrants(this.prisma);
    this.everIssued ||= read.everIssued;
    this.sharesOn = read.sharesOn;
    this.userGrants = read.grants;
    this.publish();
    await announceChange(this.prisma, "api-keys");
  }

  /**
   * Adds (grant) or removes (undefined) a running batch job's key. Job keys
   * are internal grants (they do not lock model control) with the infer
   * scope only; while traffic shares are on each names its job's tenant.
   */
  setJobGrant(jobId: string, grant: ApiKeyGrant | undefined): void {
    if (grant === undefined) this.jobGrants.delete(jobId);
    else this.jobGrants.set(jobId, grant);
    this.publish();
  }

  private publish(): void {
    const jobs = [...this.jobGrants.values()].map((grant) => {
      const { tenant, ...rest } = grant;
      return this.sharesOn && tenant !== undefined ? { ...rest, tenant } : rest;
    });
    this.grants = [...this.userGrants, ...jobs];
    for (const listener of this.listeners) listener(this.grants);
  }

  async create(
    actor: Actor,
    ownerId: string,
    input: CreateApiKeyInput,
  ): Promise<{ key: string; summary: ApiKeySummary }> {
    if (input.expiresAt && input.expiresAt.getTime() <= Date.now()) {
      throw new AppError("VALIDATION_FAILED", "the expiry date is in the past", {
        fieldErrors: [{ path: "expiresAt", message: "must be in the future" }],
      });
    }
    const generated = generateApiKey();
    const row = await this.prisma.$transaction(async (tx) => {
      // A member of a tenant (an owner of a key an admin put in a group, revoked keys included)
      // makes keys for that tenant: a fresh key must not step around the tenant's share. An admin
      // may move the key elsewhere afterwards (tenants.assignKey).
      const member = await tx.apiKey.findFirst({
        where: { ownerId, tenantGroupId: { not: null } },
        orderBy: { createdAt: "desc" },
        select: { tenantGroupId: true },
      });
      const created = await tx.apiKey.create({
        data: {
          ...(member?.tenantGroupId ? { tenantGroupId: member.tenantGroupId } : {}),
          name: input.name,
          keyHash: generated.hash,
          prefix: generated.prefix,
          scopes: [...new Set(input.scopes)],
          ownerId,
          expiresAt: input.expiresAt ?? null,
          priorityLevel: input.priorityLevel ?? 0,
          qpsQuota: input.qpsQuota ?? null,
        },
      });
      await recordAudit(tx, actor, {
        action: "apiKey.create",
        targetType: "ApiKey",
        targetId: created.id,
        after: summarizeApiKey(created),
      });
      return created;
    });
    await this.reload();
    return { key: generated.key, summary: summarizeApiKey(row) };
  }

  /** Revokes a key; `mayRevoke` decides whether the actor may touch this owner's keys. */
  async revoke(actor: Actor, id: string, mayRevoke: (ownerId: string) => boolean): Promise<ApiKeySummary> {
    const existing = await this.prisma.apiKey.findUnique({ where: { id } });
    if (!existing || !mayRevoke(existing.ownerId)) throw notFound(`API key ${id}`);
    if (existing.revokedAt)
      throw new AppError("CONFLICT", `API key '${existing.name}' (${existing.prefix}) is already revoked`);
    const row = await this.prisma.$transaction(async (tx) => {
      const updated = await tx.apiKey.update({ where: { id }, data: { revokedAt: new Date() } });
      await recordAudit(tx, actor, {
        action: "apiKey.revoke",
        targetType: "ApiKey",
        targetId: id,
        before: summarizeApiKey(existing),
        after: summarizeApiKey(updated),
      });
      return updated;
    });
    await this.reload();
    return summarizeApiKey(row);
  }

  async list(filter: { ownerId?: string; includeRevoked: boolean }): Promise<ApiKeySummary[]> {
    const rows = await this.prisma.apiKey.findMany({
      where: {
        ...(filter.ownerId ? { ownerId: filter.ownerId } : {}),
        ...(filter.includeRevoked ? {} : { revokedAt: null }),
      },
      include: { owner: { select: { email: true } } },
      orderBy: { createdAt: "desc" },
    });
    return rows.map(summarizeApiKey);
  }

  /**
   * Writes a model control change made through the gateway's own API (not
   * the console, which audits its own) to the audit log: the key's owner as
   * the actor, the key, the caller's address. Anonymous changes (model
   * control open on loopback) have no actor. Off the request path.
   */
  async recordGatewayChange(event: {
    action: string;
    target: string;
    keyId: string | null;
    transport: string;
    address: string | null;
    configOverride?: boolean;
    files?: string[];
    nativeLibraries?: Array<{ file: string; sha256: string }>;
  }): Promise<void> {
    const key =
      event.keyId !== null
        ? await this.prisma.apiKey.findUnique({ where: { id: event.keyId }, select: { ownerId: true } })
        : null;
    await recordAudit(
      this.prisma,
      { userId: key?.ownerId ?? null, apiKeyId: key ? event.keyId : null, ip: event.address },
      {
        action: `gateway.${event.action}`,
        targetType: event.action.startsWith("operator.") ? "Operator" : "Model",
        targetId: event.target,
        after: {
          via: event.transport,
          anonymous: event.keyId === null,
          ...(event.configOverride !== undefined ? { configOverride: event.configOverride } : {}),
          ...(event.files !== undefined && event.files.length > 0 ? { files: event.files } : {}),
          // Native code loaded with the server's rights: which library exactly.
          ...(event.nativeLibraries !== undefined && event.nativeLibraries.length > 0
            ? { nativeLibraries: event.nativeLibraries }
            : {}),
        },
      },
    );
  }

  /** Records when keys were last used (the gateway reports use; written in batches, off the request path). */
  async markUsed(usedAt: Map<string, number>): Promise<void> {
    for (const [id, at] of usedAt) {
      await this.prisma.apiKey.updateMany({ where: { id }, data: { lastUsedAt: new Date(at) } });
    }
  }
}

/** The user keys' grants as the database holds them now (what every gateway checks requests against). */
export interface UserGrants {
  grants: ApiKeyGrant[];
  /** Some key was ever issued (revoked and expired ones keep their rows): model control stays locked. */
  everIssued: boolean;
  /** Traffic shares are on (some tenant group exists): every grant names its tenant. */
  sharesOn: boolean;
}

/**
 * Reads the valid user keys (not revoked, not expired, owner enabled) with
 * their scopes cut to the owner's role. Read-only: the control plane's
 * ApiKeyService and the --role gateway processes share it.
 */
export async function readUserGrants(prisma: PrismaClient): Promise<UserGrants> {
  const rows = await prisma.apiKey.findMany({
    where: {
      revokedAt: null,
      OR: [{ expiresAt: null }, { expiresAt: { gt: new Date() } }],
      owner: { disabled: false },
    },
    include: {
      owner: { select: { role: true, email: true } },
      tenantGroup: { select: { id: true, share: true, policy: true } },
    },
  });
  const everIssued = rows.length > 0 || (await prisma.apiKey.count()) > 0;
  const sharesOn = (await prisma.tenantGroup.count()) > 0;
  const grants = rows
    .map((row) => ({
      row,
      scopes: summarizeApiKey(row).scopes.filter((scope) => SCOPES_BY_ROLE[row.owner.role].includes(scope)),
    }))
    .filter(({ scopes }) => scopes.length > 0)
    .map(({ row, scopes }) => ({
      id: row.id,
      hash: row.keyHash,
      scopes,
      priorityLevel: row.priorityLevel,
      qpsQuota: row.qpsQuota,
      expiresAt: row.expiresAt ? row.expiresAt.getTime() : null,
      ...(sharesOn ? { tenant: tenantOfKey(row) } : {}),
    }));
  return { grants, everIssued, sharesOn };
}

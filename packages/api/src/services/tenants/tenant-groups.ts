import { ANONYMOUS_TENANT } from "@operon/protocol/api-keys";
import type { PrismaClient, TenantGroup, TenantPolicy } from "@operon/db";
import { AppError, notFound } from "../../app-error.js";
import { recordAudit, type Actor } from "../audit/audit-log.js";
import type { ApiKeyService } from "../api-keys/api-key-service.js";
import { OWNER_TENANT_SHARE, ownerTenantId } from "./tenant-of-key.js";

/**
 * Tenants for traffic shares: named groups of API keys with a share (a
 * weight) of each busy model's capacity and a policy for requests over it.
 * Keys outside any group count for their owner (share 1, queue); requests
 * without a key for the anonymous tenant (share 1, queue).
 *
 * Shares are on while at least one group exists (deleting the last one
 * turns them off: the gateway then schedules no tenants). Every change is
 * audited in its transaction and reaches the gateway like a key change
 * (ApiKeyService.reload → the key ring's replaceAll).
 */
export interface TenantGroupInput {
  name: string;
  description?: string;
  share: number;
  policy: TenantPolicy;
}

export interface TenantKeySummary {
  id: string;
  name: string;
  prefix: string;
  ownerEmail: string;
  revoked: boolean;
}

export interface TenantSummary {
  /** The gateway's tenant id: a group id, `user:<id>` or `anonymous`. */
  id: string;
  kind: "group" | "owner" | "anonymous";
  name: string;
  description: string;
  share: number;
  policy: TenantPolicy;
  keys: TenantKeySummary[];
}

export interface TenantUsagePoint {
  at: string;
  /** Per tenant id: units served in the bucket and its part of all units served (0..1). */
  tenants: Record<string, { units: number; requests: number; throttled: number; use: number }>;
}

export interface TenantUsageSeries {
  from: string;
  to: string;
  stepSecs: number;
  /** Per tenant id: its part of the shares of the tenants that were served in the range (0..1). */
  shareOf: Record<string, number>;
  points: TenantUsagePoint[];
}

const MAX_POINTS = 120;

export class TenantGroups {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly apiKeys: ApiKeyService,
  ) {}

  /** Groups first (by name), then owners with keys outside a group, then the anonymous tenant. */
  async list(): Promise<TenantSummary[]> {
    const [groups, keys] = await Promise.all([
      this.prisma.tenantGroup.findMany({ orderBy: { name: "asc" } }),
      this.prisma.apiKey.findMany({
        where: { revokedAt: null },
        include: { owner: { select: { email: true } } },
        orderBy: { createdAt: "asc" },
      }),
    ]);
    const byGroup = new Map<string, TenantKeySummary[]>();
    const byOwner = new Map<string, { email: string; keys: TenantKeySummary[] }>();
    for (const key of keys) {
      const summary: TenantKeySummary = {
        id: key.id,
        name: key.name,
        prefix: key.prefix,
        ownerEmail: key.owner.email,
        revoked: key.revokedAt !== null,
      };
      if (key.tenantGroupId !== null)
        byGroup.set(key.tenantGroupId, [...(byGroup.get(key.tenantGroupId) ?? []), summary]);
      else {
        const owner = byOwner.get(key.ownerId) ?? { email: key.owner.email, keys: [] };
        owner.keys.push(summary);
        byOwner.set(key.ownerId, owner);
      }
    }
    return [
      ...groups.map((group) => ({ ...groupSummary(group), keys: byGroup.get(group.id) ?? [] })),
      ...[...byOwner].map(([ownerId, owner]) => ({
        id: ownerTenantId(ownerId),
        kind: "owner" as const,
        name: owner.email,
        description: "keys outside a tenant group count for their owner",
        share: OWNER_TENANT_SHARE,
        policy: "QUEUE" as const,
        keys: owner.keys,
      })),
      {
        id: ANONYMOUS_TENANT.id,
        kind: "anonymous" as const,
        name: "anonymous (no key)",
        description: "requests without an API key",
        share: ANONYMOUS_TENANT.share,
        policy: "QUEUE" as const,
        keys: [],
      },
    ];
  }

  async create(actor: Actor, input: TenantGroupInput): Promise<TenantSummary> {
    const group = await this.prisma
      .$transaction(async (tx) => {
        const created = await tx.tenantGroup.create({
          data: { name: input.name, description: input.description ?? "", share: input.share, policy: input.policy },
        });
        await recordAudit(tx, actor, {
          action: "tenant.create",
          targetType: "TenantGroup",
          targetId: created.id,
          after: created,
        });
        return created;
      })
      .catch((error: unknown) => rethrowDuplicateName(error, input.name));
    await this.apiKeys.reload();
    return { ...groupSummary(group), keys: [] };
  }

  async update(actor: Actor, id: string, change: Partial<TenantGroupInput>): Promise<TenantSummary> {
    const existing = await this.prisma.tenantGroup.findUnique({ where: { id } });
    if (existing === null) throw notFound(`tenant ${id}`);
    const group = await this.prisma
      .$transaction(async (tx) => {
        const updated = await tx.tenantGroup.update({ where: { id }, data: change });
        await recordAudit(tx, actor, {
          action: "tenant.update",
          targetType: "TenantGroup",
          targetId: id,
          before: existing,
          after: updated,
        });
        return updated;
      })
      .catch((error: unknown) => rethrowDuplicateName(error, change.name ?? existing.name));
    await this.apiKeys.reload();
    return { ...groupSummary(group), keys: [] };
  }

  /** Its keys go back to counting for their owners. */
  async remove(actor: Actor, id: string): Promise<void> {
    const existing = await this.prisma.tenantGroup.findUnique({
      where: { id },
      include: { keys: { select: { id: true } } },
    });
    if (existing === null) throw notFound(`tenant ${id}`);
    await this.prisma.$transaction(async (tx) => {
      await tx.apiKey.updateMany({ where: { tenantGroupId: id }, data: { tenantGroupId: null } });
      await tx.tenantGroup.delete({ where: { id } });
      const { keys, ...before } = existing;
      await recordAudit(tx, actor, {
        action: "tenant.delete",
        targetType: "TenantGroup",
        targetId: id,
        before: { ...before, keyIds: keys.map((key) => key.id) },
      });
    });
    await this.apiKeys.reload();
  }

  /** Puts a key in a group (null: back to its owner). NOT_FOUND for an unknown or revoked key or group. */
  async assignKey(actor: Actor, keyId: string, groupId: string | null): Promise<void> {
    const key = await this.prisma.apiKey.findUnique({ where: { id: keyId } });
    if (key === null || key.revokedAt !== null) throw notFound(`API key ${keyId}`);
    if (
      groupId !== null &&
      (await this.prisma.tenantGroup.findUnique({ where: { id: groupId }, select: { id: true } })) === null
    ) {
      throw new AppError("VALIDATION_FAILED", `tenant ${groupId} does not exist`, {
        fieldErrors: [{ path: "tenantId", message: "no such tenant" }],
      });
    }
    if (key.tenantGroupId === groupId) return;
    await this.prisma.$transaction(async (tx) => {
      await tx.apiKey.update({ where: { id: keyId }, data: { tenantGroupId: groupId } });
      await recordAudit(tx, actor, {
        action: "tenant.assignKey",
        targetType: "ApiKey",
        targetId: keyId,
        before: { tenantGroupId: key.tenantGroupId },
        after: { tenantGroupId: groupId },
      });
    });
    await this.apiKeys.reload();
  }

  /**
   * Each tenant's use against its share over [from, to): units per bucket
   * (at most MAX_POINTS buckets) and their part of all units served, next
   * to the tenant's part of the shares of the tenants served in the range.
   */
  async usage(from: Date, to: Date): Promise<TenantUsageSeries> {
    const spanMs = Math.max(1, to.getTime() - from.getTime());
    const stepMs = Math.max(15_000, Math.ceil(spanMs / MAX_POINTS / 15_000) * 15_000);
    const rows = await this.prisma.tenantUsageSample.findMany({
      where: { at: { gte: from, lt: to } },
      orderBy: { at: "asc" },
    });
    const buckets = new Map<number, TenantUsagePoint["tenants"]>();
    const shares = new Map<string, number>();
    for (const row of rows) {
      const bucket = from.getTime() + Math.floor((row.at.getTime() - from.getTime()) / stepMs) * stepMs;
      const tenants = buckets.get(bucket) ?? {};
      const entry = (tenants[row.tenant] ??= { units: 0, requests: 0, throttled: 0, use: 0 });
      entry.units += row.units;
      entry.requests += row.requests;
      entry.throttled += row.throttled;
      buckets.set(bucket, tenants);
      shares.set(row.tenant, row.share);
    }
    const points: TenantUsagePoint[] = [];
    for (const [at, tenants] of [...buckets].sort(([a], [b]) => a - b)) {
      const total = Object.values(tenants).reduce((sum, entry) => sum + entry.units, 0);
      for (const entry of Object.values(tenants)) entry.use = total > 0 ? entry.units / total : 0;
      points.push({ at: new Date(at).toISOString(), tenants });
    }
    const shareTotal = [...shares.values()].reduce((sum, share) => sum + share, 0);
    const shareOf = Object.fromEntries(
      [...shares].map(([tenant, share]) => [tenant, shareTotal > 0 ? share / shareTotal : 0]),
    );
    return { from: from.toISOString(), to: to.toISOString(), stepSecs: stepMs / 1000, shareOf, points };
  }
}

function groupSummary(group: TenantGroup): Omit<TenantSummary, "keys"> {
  return {
    id: group.id,
    kind: "group",
    name: group.name,
    description: group.description,
    share: group.share,
    policy: group.policy,
  };
}

function rethrowDuplicateName(error: unknown, name: string): never {
  // P2002: the unique index on the name (driver adapters report it without the client's error class, so by code).
  if (typeof error === "object" && error !== null && (error as { code?: unknown }).code === "P2002") {
    throw new AppError("CONFLICT", `a tenant named '${name}' already exists`, {
      fieldErrors: [{ path: "name", message: "already taken" }],
    });
  }
  throw error;
}

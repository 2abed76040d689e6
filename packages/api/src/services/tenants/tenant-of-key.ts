import type { TenantGrant } from "@operon/protocol/api-keys";
import type { TenantPolicy } from "@operon/db";

/**
 * Who a key's traffic counts for: its tenant group, or else its owner (a
 * tenant of their own with share 1 and the queue policy). The gateway knows
 * tenants only by these ids; the console names them (tenant-names.ts).
 */
export const OWNER_TENANT_SHARE = 1;

export function tenantOfKey(key: {
  ownerId: string;
  tenantGroup: { id: string; share: number; policy: TenantPolicy } | null;
}): TenantGrant {
  if (key.tenantGroup !== null)
    return {
      id: key.tenantGroup.id,
      share: key.tenantGroup.share,
      policy: key.tenantGroup.policy === "REFUSE" ? "refuse" : "queue",
    };
  return { id: ownerTenantId(key.ownerId), share: OWNER_TENANT_SHARE, policy: "queue" };
}

export function ownerTenantId(userId: string): string {
  return `user:${userId}`;
}

import { hashApiKey, apiKeyPrefixOf, controlPlaneGrant, type ApiKeyGrant } from "@operon/protocol/api-keys";
import { announceChange, type PrismaClient } from "@operon/db";

/**
 * The control plane's internal key, stored so that every gateway of a
 * cluster accepts it (issue 23): the usage sampler reads each gateway's
 * workers (admin scope), and the control plane's model control goes through
 * its own gateway with it.
 *
 * Contract:
 * - the secret is made in the control plane's memory at each start and never
 *   stored: a ControlPlaneKey row holds its SHA-256 hash and prefix only;
 * - storing it revokes every earlier control plane key in the same
 *   transaction (it rotates per start), then announces "api-keys", so each
 *   gateway drops the old key and accepts the new one within its change
 *   notice (or at its next resync);
 * - it belongs to no user: no console view or user API reads the
 *   ControlPlaneKey table, so no user sees, uses or revokes it. An operator
 *   with database access can revoke it (`UPDATE "ControlPlaneKey" SET
 *   "revokedAt" = now()` and a `NOTIFY operon_changes, 'api-keys'`): the
 *   gateways then refuse the control plane, which logs each refusal naming
 *   the key (usage-sampler.ts) until it is restarted and makes a new one.
 *   Its own gateway keeps the key in memory (it is given the grant directly).
 *
 * Two control planes on one database would revoke each other's key: the
 * deployment runs one control plane replica.
 */
export { CONTROL_PLANE_KEY_ID, controlPlaneGrant } from "@operon/protocol/api-keys";

/** Stores the key's hash as the valid control plane key, revoking the earlier ones; returns how many were revoked. */
export async function storeControlPlaneKey(prisma: PrismaClient, key: string): Promise<{ revoked: number }> {
  const prefix = apiKeyPrefixOf(key);
  if (prefix === undefined) throw new Error("the control plane's internal key is not a well-formed Operon API key");
  const revoked = await prisma.$transaction(async (tx) => {
    const { count } = await tx.controlPlaneKey.updateMany({
      where: { revokedAt: null },
      data: { revokedAt: new Date() },
    });
    await tx.controlPlaneKey.create({ data: { keyHash: hashApiKey(key), prefix } });
    return count;
  });
  await announceChange(prisma, "api-keys");
  return { revoked };
}

/** The grants of the valid control plane keys (one, or none before the first control plane started): for the gateways' key rings. */
export async function readControlPlaneGrants(prisma: PrismaClient): Promise<ApiKeyGrant[]> {
  const rows = await prisma.controlPlaneKey.findMany({ where: { revokedAt: null }, select: { keyHash: true } });
  return rows.map((row) => controlPlaneGrant(row.keyHash));
}

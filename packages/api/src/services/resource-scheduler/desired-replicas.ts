import type { Prisma, PrismaClient } from "@operon/db";
import { recordAudit, SYSTEM_ACTOR } from "../audit/audit-log.js";
import type { ReplicaDecision } from "./gateway-replicas.js";

/**
 * The desired gateway replica count as the database keeps it (one
 * GatewayReplicas row): what a restarted control plane exports at once and
 * scales down from, so a restart neither drops the gauge (the HPA would hold
 * its count without a value, but a new count from nothing could halve the
 * gateways under load) nor restarts the scale-down cooldown.
 */
export interface DesiredReplicasView {
  desired: number;
  reason: string;
  /** When the count last changed, ISO. */
  changedAt: string;
  /** When it was last decided (each period), ISO. */
  decidedAt: string;
  /** The inputs it was decided from: per gateway and summed. */
  inputs: unknown;
}

export async function readDesiredReplicas(prisma: PrismaClient): Promise<DesiredReplicasView | null> {
  const row = await prisma.gatewayReplicas.findUnique({ where: { id: "default" } });
  return row === null
    ? null
    : {
        desired: row.desired,
        reason: row.reason,
        changedAt: row.changedAt.toISOString(),
        decidedAt: row.decidedAt.toISOString(),
        inputs: row.inputs,
      };
}

/** Stores a period's decision; a changed count is audited (scheduler.replicas) and restarts the cooldown. */
export async function storeDesiredReplicas(
  prisma: PrismaClient,
  decision: ReplicaDecision,
  inputs: Record<string, unknown>,
  now: number,
): Promise<{ changed: boolean }> {
  const changed = decision.from !== decision.replicas;
  const json = JSON.parse(JSON.stringify(inputs)) as Prisma.InputJsonObject;
  await prisma.$transaction(async (tx) => {
    await tx.gatewayReplicas.upsert({
      where: { id: "default" },
      create: {
        id: "default",
        desired: decision.replicas,
        reason: decision.reason,
        inputs: json,
        changedAt: new Date(now),
      },
      update: {
        desired: decision.replicas,
        reason: decision.reason,
        inputs: json,
        ...(changed ? { changedAt: new Date(now) } : {}),
      },
    });
    if (changed)
      await recordAudit(tx, SYSTEM_ACTOR, {
        action: "scheduler.replicas",
        targetType: "gateways",
        targetId: "operon-gateway",
        before: decision.from === null ? undefined : { replicas: decision.from },
        after: { replicas: decision.replicas, reason: decision.reason },
      });
  });
  return { changed };
}

import type { Prisma, PrismaClient } from "@operon/db";

/**
 * Every state change writes one audit event, in the same transaction as the
 * change itself, so that neither exists without the other. `before` and
 * `after` are snapshots of the changed record with secrets removed.
 */

/** Who did it: a signed-in user (console/API), an API key, or the system (background jobs, CLI). */
export interface Actor {
  userId: string | null;
  apiKeyId?: string | null;
  ip?: string | null;
}

export const SYSTEM_ACTOR: Actor = { userId: null };

export interface AuditEntry {
  /** `<area>.<verb>`, e.g. `user.create`, `model.upload`, `apiKey.revoke`. */
  action: string;
  targetType: string;
  targetId?: string | null;
  before?: unknown;
  after?: unknown;
}

type TransactionClient = Prisma.TransactionClient | PrismaClient;

const SECRET_FIELDS = new Set(["passwordHash", "keyHash", "tokenHash", "password", "key"]);

/** JSON-safe copy without secrets: BigInt and Decimal become strings, Dates ISO strings. */
export function auditSnapshot(value: unknown): Prisma.InputJsonValue | undefined {
  if (value === undefined || value === null) return undefined;
  return JSON.parse(
    JSON.stringify(value, (key, field: unknown) => {
      if (SECRET_FIELDS.has(key)) return undefined;
      if (typeof field === "bigint") return field.toString();
      return field;
    }),
  ) as Prisma.InputJsonValue;
}

export async function recordAudit(tx: TransactionClient, actor: Actor, entry: AuditEntry): Promise<void> {
  await tx.auditEvent.create({
    data: {
      actorId: actor.userId,
      apiKeyId: actor.apiKeyId ?? null,
      ip: actor.ip ?? null,
      action: entry.action,
      targetType: entry.targetType,
      targetId: entry.targetId ?? null,
      ...(auditSnapshot(entry.before) !== undefined ? { before: auditSnapshot(entry.before) } : {}),
      ...(auditSnapshot(entry.after) !== undefined ? { after: auditSnapshot(entry.after) } : {}),
    },
  });
}

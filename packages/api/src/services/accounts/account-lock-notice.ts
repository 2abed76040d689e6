import type { PrismaClient } from "@operon/db";
import type { Logger } from "@operon/protocol/logger";
import { recordAudit } from "../audit/audit-log.js";
import { normalizeEmail } from "./user-accounts.js";

/**
 * Tells the platform's admins that an account was locked by failed
 * sign-ins from all addresses together (LoginRateLimiter): the audit event
 * `auth.accountLocked` (the console's Audit page, which admins read) and a
 * warning in the server's log. Never throws: the lock holds either way.
 */
export async function noticeAccountLocked(
  prisma: PrismaClient,
  logger: Logger,
  lock: { email: string; lockedForSecs: number; failures: number; ip: string },
): Promise<void> {
  try {
    const user = await prisma.user.findUnique({ where: { email: normalizeEmail(lock.email) }, select: { id: true } });
    await recordAudit(
      prisma,
      { userId: null, ip: lock.ip },
      {
        action: "auth.accountLocked",
        targetType: "User",
        targetId: user?.id ?? null,
        after: {
          email: lock.email,
          failedSignIns: lock.failures,
          lockedForSecs: lock.lockedForSecs,
          knownAccount: user !== null,
        },
      },
    );
    logger.warn(
      { email: lock.email, lockedForSecs: lock.lockedForSecs, lastAddress: lock.ip },
      "account locked: too many failed sign-ins from all addresses",
    );
  } catch (error) {
    logger.error({ err: (error as Error).message, email: lock.email }, "cannot record an account lock");
  }
}

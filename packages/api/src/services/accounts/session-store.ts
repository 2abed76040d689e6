import { createHash, randomBytes } from "node:crypto";
import type { PrismaClient, Role } from "@operon/db";

/**
 * Console sessions. The browser holds a random token in an httpOnly cookie;
 * the database holds only its SHA-256, so a leaked table signs nobody in.
 */
export const SESSION_TTL_MS = 7 * 24 * 3600 * 1000;
/** lastSeenAt is written at most this often per session, not on every call. */
const TOUCH_INTERVAL_MS = 60_000;

export interface SessionUser {
  id: string;
  email: string;
  name: string | null;
  role: Role;
}

export interface ActiveSession {
  sessionId: string;
  user: SessionUser;
}

function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

export class SessionStore {
  constructor(private readonly prisma: PrismaClient) {}

  /** Returns the token for the cookie; it is not stored anywhere. */
  async create(
    userId: string,
    meta: { ip?: string | null; userAgent?: string | null },
  ): Promise<{ token: string; expiresAt: Date }> {
    const token = randomBytes(32).toString("base64url");
    const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
    await this.prisma.session.create({
      data: {
        userId,
        tokenHash: hashToken(token),
        expiresAt,
        ip: meta.ip ?? null,
        userAgent: meta.userAgent?.slice(0, 512) ?? null,
      },
    });
    return { token, expiresAt };
  }

  /** The session's user, or null when the token is unknown, expired, revoked or its user disabled. */
  async resolve(token: string): Promise<ActiveSession | null> {
    const session = await this.prisma.session.findUnique({
      where: { tokenHash: hashToken(token) },
      include: { user: true },
    });
    const now = Date.now();
    if (!session || session.revokedAt || session.expiresAt.getTime() <= now || session.user.disabled) return null;
    if (!session.lastSeenAt || now - session.lastSeenAt.getTime() > TOUCH_INTERVAL_MS) {
      await this.prisma.session.update({ where: { id: session.id }, data: { lastSeenAt: new Date(now) } });
    }
    const { id, email, name, role } = session.user;
    return { sessionId: session.id, user: { id, email, name, role } };
  }

  async revoke(sessionId: string): Promise<void> {
    await this.prisma.session.updateMany({
      where: { id: sessionId, revokedAt: null },
      data: { revokedAt: new Date() },
    });
  }

  /** Signs a user out everywhere (on disable; a password change does it in its own transaction, user-accounts.ts). */
  async revokeAllFor(userId: string): Promise<void> {
    await this.prisma.session.updateMany({ where: { userId, revokedAt: null }, data: { revokedAt: new Date() } });
  }
}

import type { Prisma, PrismaClient, Role, User } from "@operon/db";
import { AppError, notFound } from "../../app-error.js";
import { recordAudit, type Actor } from "../audit/audit-log.js";
import { hashPassword, MIN_PASSWORD_LENGTH } from "./password-hasher.js";
import { passwordProblem } from "./password-rule.js";

/**
 * Accounts: creating users (the first admin included), changing roles,
 * disabling. Shared by the users router, first-run setup and `operon admin
 * create`, so the rules hold whichever way an account is made.
 */
export interface NewUser {
  email: string;
  name?: string | null;
  role: Role;
  password: string;
}

/** A user as the API shows it: never the password hash. */
export interface UserSummary {
  id: string;
  email: string;
  name: string | null;
  role: Role;
  disabled: boolean;
  createdAt: Date;
  lastLoginAt: Date | null;
}

export function summarizeUser(user: User): UserSummary {
  const { id, email, name, role, disabled, createdAt, lastLoginAt } = user;
  return { id, email, name, role, disabled, createdAt, lastLoginAt };
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Throws VALIDATION_FAILED naming the rule (password-rule.ts) a new password breaks; `email` is the account's. */
export function checkPassword(password: string, path = "password", email?: string): void {
  const problem = passwordProblem(password, email);
  if (problem === undefined) return;
  const message =
    password.length < MIN_PASSWORD_LENGTH
      ? `the password must have at least ${MIN_PASSWORD_LENGTH} characters`
      : `the password is refused: ${problem}`;
  throw new AppError("VALIDATION_FAILED", message, { fieldErrors: [{ path, message: problem }] });
}

export async function createUser(
  prisma: PrismaClient,
  actor: Actor,
  input: NewUser,
  options: { onlyIfNoUsers?: boolean } = {},
): Promise<UserSummary> {
  const email = normalizeEmail(input.email);
  checkPassword(input.password, "password", email);
  const passwordHash = await hashPassword(input.password);
  try {
    const user = await prisma.$transaction(async (tx) => {
      if (options.onlyIfNoUsers && (await tx.user.count()) > 0) {
        throw new AppError("CONFLICT", "an account already exists: first-run setup is over; sign in instead");
      }
      const created = await tx.user.create({
        data: { email, name: input.name ?? null, role: input.role, passwordHash },
      });
      await recordAudit(
        tx,
        { ...actor, userId: actor.userId ?? created.id },
        { action: "user.create", targetType: "User", targetId: created.id, after: summarizeUser(created) },
      );
      return created;
    });
    return summarizeUser(user);
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new AppError("CONFLICT", `a user with email ${email} already exists`, {
        fieldErrors: [{ path: "email", message: "already in use" }],
      });
    }
    throw error;
  }
}

/** Changes role or disabled state; refuses to leave the platform without an enabled admin. */
export async function updateUser(
  prisma: PrismaClient,
  actor: Actor,
  id: string,
  change: { role?: Role; disabled?: boolean },
): Promise<UserSummary> {
  const user = await prisma.$transaction(async (tx) => {
    const before = await tx.user.findUnique({ where: { id } });
    if (!before) throw notFound(`user ${id}`);
    const losesAdmin =
      before.role === "ADMIN" &&
      !before.disabled &&
      ((change.role !== undefined && change.role !== "ADMIN") || change.disabled === true);
    if (losesAdmin && (await tx.user.count({ where: { role: "ADMIN", disabled: false } })) <= 1) {
      throw new AppError("CONFLICT", `${before.email} is the last enabled admin; make another admin first`);
    }
    const data: Prisma.UserUpdateInput = {};
    if (change.role !== undefined) data.role = change.role;
    if (change.disabled !== undefined) data.disabled = change.disabled;
    const after = await tx.user.update({ where: { id }, data });
    const action = change.disabled !== undefined ? (change.disabled ? "user.disable" : "user.enable") : "user.setRole";
    await recordAudit(tx, actor, {
      action,
      targetType: "User",
      targetId: id,
      before: summarizeUser(before),
      after: summarizeUser(after),
    });
    return after;
  });
  return summarizeUser(user);
}

/**
 * Replaces a user's password and, in the same transaction, signs the user
 * out of every session but `keepSessionId` (their own, when they changed it
 * themselves). `action` says who did it in the audit log: the user
 * (user.changePassword) or an admin (user.resetPassword). Returns how many
 * sessions were signed out. A reset by an admin (a lost or taken-over
 * account) also revokes every API key of the user, in the same transaction;
 * the caller reloads the gateway's keys.
 */
export async function setPassword(
  prisma: PrismaClient,
  actor: Actor,
  id: string,
  password: string,
  options: { action: "user.changePassword" | "user.resetPassword"; field: string; keepSessionId?: string | null },
): Promise<number> {
  const account = await prisma.user.findUnique({ where: { id }, select: { email: true } });
  if (!account) throw notFound(`user ${id}`);
  checkPassword(password, options.field, account.email);
  const passwordHash = await hashPassword(password);
  return prisma.$transaction(async (tx) => {
    const updated = await tx.user.updateMany({ where: { id }, data: { passwordHash } });
    if (updated.count === 0) throw notFound(`user ${id}`);
    const { count } = await tx.session.updateMany({
      where: { userId: id, revokedAt: null, ...(options.keepSessionId ? { id: { not: options.keepSessionId } } : {}) },
      data: { revokedAt: new Date() },
    });
    const keysRevoked =
      options.action === "user.resetPassword"
        ? (await tx.apiKey.updateMany({ where: { ownerId: id, revokedAt: null }, data: { revokedAt: new Date() } }))
            .count
        : 0;
    await recordAudit(tx, actor, {
      action: options.action,
      targetType: "User",
      targetId: id,
      after: { sessionsSignedOut: count, ...(keysRevoked > 0 ? { apiKeysRevoked: keysRevoked } : {}) },
    });
    return count;
  });
}

export function isUniqueViolation(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === "P2002";
}

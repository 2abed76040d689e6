import { timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { AppError } from "../app-error.js";
import { SESSION_COOKIE } from "../context.js";
import { recordAudit } from "../services/audit/audit-log.js";
import { decoyPasswordHash, verifyPassword } from "../services/accounts/password-hasher.js";
import { SESSION_TTL_MS } from "../services/accounts/session-store.js";
import { createUser, normalizeEmail, setPassword, summarizeUser } from "../services/accounts/user-accounts.js";
import { publicProcedure, router, viewerProcedure } from "../trpc.js";
import type { ApiContext } from "../context.js";

const email = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.email({ error: "not an email address" }));
const password = z.string().min(1, { error: "required" }).max(1024);

async function startSession(ctx: ApiContext, userId: string): Promise<void> {
  const { token } = await ctx.services.sessions.create(userId, { ip: ctx.ip, userAgent: ctx.userAgent });
  ctx.cookies.set(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: "lax",
    maxAge: Math.floor(SESSION_TTL_MS / 1000),
  });
  ctx.bindCsrf(token);
}

function tokenMatches(expected: string | undefined, given: string): boolean {
  if (!expected) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

export const authRouter = router({
  /** Who is signed in, and whether first-run setup is still open. */
  session: publicProcedure.query(async ({ ctx }) => ({
    user: ctx.user,
    needsSetup: ctx.services.setup.token !== undefined && (await ctx.services.prisma.user.count()) === 0,
  })),

  signIn: publicProcedure.input(z.object({ email, password })).mutation(async ({ ctx, input }) => {
    const limiter = ctx.services.loginLimiter;
    // The attempt is counted before its password is checked: concurrent guesses cannot share one budget.
    await limiter.reserve(ctx.ip, input.email);
    const user = await ctx.services.prisma.user.findUnique({ where: { email: normalizeEmail(input.email) } });
    // Unknown accounts cost the same hash check as wrong passwords.
    const valid = await verifyPassword(user?.passwordHash ?? (await decoyPasswordHash()), input.password);
    if (!user || !valid || user.disabled) {
      await recordAudit(
        ctx.services.prisma,
        { userId: user?.id ?? null, ip: ctx.ip },
        {
          action: "auth.signInFailed",
          targetType: "User",
          targetId: user?.id ?? null,
          after: {
            email: input.email,
            reason: !user ? "unknown email" : user.disabled ? "disabled" : "wrong password",
          },
        },
      );
      // One message for every cause, so the form does not reveal which accounts exist.
      throw new AppError("UNAUTHENTICATED", "wrong email or password, or the account is disabled");
    }
    await limiter.succeeded(ctx.ip, input.email);
    await ctx.services.prisma.$transaction(async (tx) => {
      await tx.user.update({ where: { id: user.id }, data: { lastLoginAt: new Date() } });
      await recordAudit(
        tx,
        { userId: user.id, ip: ctx.ip },
        { action: "auth.signIn", targetType: "User", targetId: user.id },
      );
    });
    await startSession(ctx, user.id);
    const { id, email: userEmail, name, role } = user;
    return { user: { id, email: userEmail, name, role } };
  }),

  signOut: viewerProcedure.mutation(async ({ ctx }) => {
    if (ctx.sessionId) await ctx.services.sessions.revoke(ctx.sessionId);
    await recordAudit(ctx.services.prisma, ctx.actor, {
      action: "auth.signOut",
      targetType: "User",
      targetId: ctx.user.id,
    });
    ctx.cookies.clear(SESSION_COOKIE);
    ctx.bindCsrf(null);
    return { ok: true as const };
  }),

  /** First run: creates the first admin with the setup token `operon serve` printed, then signs them in. */
  completeSetup: publicProcedure
    .input(z.object({ token: z.string().min(1), email, name: z.string().trim().max(200).optional(), password }))
    .mutation(async ({ ctx, input }) => {
      const setup = ctx.services.setup;
      if (setup.token === undefined)
        throw new AppError("CONFLICT", "first-run setup is over: an admin exists; sign in instead");
      if (!tokenMatches(setup.token, input.token)) {
        throw new AppError(
          "FORBIDDEN",
          "the setup token is wrong; use the one `operon serve` printed in its terminal",
          {
            fieldErrors: [{ path: "token", message: "does not match" }],
          },
        );
      }
      const user = await createUser(
        ctx.services.prisma,
        { userId: null, ip: ctx.ip },
        { email: input.email, name: input.name ?? null, role: "ADMIN", password: input.password },
        { onlyIfNoUsers: true },
      );
      setup.token = undefined;
      await startSession(ctx, user.id);
      // Setup signs the admin in: it is their first sign-in, and Users should say so.
      const signedIn = await ctx.services.prisma.user.update({
        where: { id: user.id },
        data: { lastLoginAt: new Date() },
      });
      return { user: summarizeUser(signedIn) };
    }),

  /**
   * The signed-in user's own password. Wrong current passwords count against
   * the sign-in limit (a stolen session must not become a password oracle).
   * Every other session of the user is signed out; this one stays.
   */
  changePassword: viewerProcedure
    .input(z.object({ currentPassword: password, newPassword: password }))
    .mutation(async ({ ctx, input }) => {
      const limiter = ctx.services.loginLimiter;
      await limiter.reserve(ctx.ip, ctx.user.email, "password checks");
      const user = await ctx.services.prisma.user.findUniqueOrThrow({ where: { id: ctx.user.id } });
      if (!(await verifyPassword(user.passwordHash ?? "", input.currentPassword))) {
        throw new AppError("VALIDATION_FAILED", "the current password is wrong", {
          fieldErrors: [{ path: "currentPassword", message: "wrong password" }],
        });
      }
      await limiter.succeeded(ctx.ip, ctx.user.email);
      if (input.newPassword === input.currentPassword) {
        throw new AppError("VALIDATION_FAILED", "the new password is the same as the current one", {
          fieldErrors: [{ path: "newPassword", message: "same as the current password" }],
        });
      }
      const signedOut = await setPassword(ctx.services.prisma, ctx.actor, ctx.user.id, input.newPassword, {
        action: "user.changePassword",
        field: "newPassword",
        keepSessionId: ctx.sessionId,
      });
      return {
        user: summarizeUser(await ctx.services.prisma.user.findUniqueOrThrow({ where: { id: ctx.user.id } })),
        otherSessionsSignedOut: signedOut,
      };
    }),
});

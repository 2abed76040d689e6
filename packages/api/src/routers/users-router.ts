import { z } from "zod";
import { Role } from "@operon/db";
import { AppError } from "../app-error.js";
import { createUser, setPassword, summarizeUser, updateUser } from "../services/accounts/user-accounts.js";
import { adminProcedure, router } from "../trpc.js";

const role = z.enum([Role.ADMIN, Role.ENGINEER, Role.VIEWER]);

export const usersRouter = router({
  list: adminProcedure.query(async ({ ctx }) =>
    (await ctx.services.prisma.user.findMany({ orderBy: { createdAt: "asc" } })).map(summarizeUser),
  ),

  /** Creates an account with an initial password the admin passes on (there is no email delivery). */
  create: adminProcedure
    .input(
      z.object({
        email: z
          .string()
          .trim()
          .toLowerCase()
          .pipe(z.email({ error: "not an email address" })),
        name: z.string().trim().max(200).optional(),
        role,
        password: z.string().max(1024),
      }),
    )
    .mutation(({ ctx, input }) => createUser(ctx.services.prisma, ctx.actor, { ...input, name: input.name ?? null })),

  /** The user's API keys follow the new role at once (SCOPES_BY_ROLE): a demoted admin's admin-scope keys lose model control. */
  setRole: adminProcedure.input(z.object({ id: z.uuid(), role })).mutation(async ({ ctx, input }) => {
    const user = await updateUser(ctx.services.prisma, ctx.actor, input.id, { role: input.role });
    await ctx.services.apiKeys.reload();
    return user;
  }),

  /** Disabling signs the user out everywhere and invalidates their API keys at the gateway. */
  setDisabled: adminProcedure
    .input(z.object({ id: z.uuid(), disabled: z.boolean() }))
    .mutation(async ({ ctx, input }) => {
      const user = await updateUser(ctx.services.prisma, ctx.actor, input.id, { disabled: input.disabled });
      if (input.disabled) await ctx.services.sessions.revokeAllFor(input.id);
      await ctx.services.apiKeys.reload();
      return user;
    }),

  /**
   * Sets another user's password (a forgotten one; there is no email
   * delivery, so the admin passes it on), signs them out everywhere and
   * revokes their API keys (the account may have been taken over).
   * Admins change their own with auth.changePassword, which asks for the current one.
   */
  resetPassword: adminProcedure
    .input(z.object({ id: z.uuid(), password: z.string().max(1024) }))
    .mutation(async ({ ctx, input }) => {
      if (input.id === ctx.user.id) {
        throw new AppError(
          "VALIDATION_FAILED",
          "use Account → Change password for your own password (it asks for the current one)",
          {
            fieldErrors: [{ path: "id", message: "your own account" }],
          },
        );
      }
      await setPassword(ctx.services.prisma, ctx.actor, input.id, input.password, {
        action: "user.resetPassword",
        field: "password",
      });
      await ctx.services.apiKeys.reload();
      return summarizeUser(await ctx.services.prisma.user.findUniqueOrThrow({ where: { id: input.id } }));
    }),
});

import { initTRPC, TRPCError } from "@trpc/server";
import { ZodError } from "zod";
import type { Role } from "@operon/db";
import { APP_ERROR_TRPC_CODES, AppError, type AppErrorCode, type FieldError } from "./app-error.js";
import type { ApiContext } from "./context.js";
import type { SessionUser } from "./services/accounts/session-store.js";
import type { Actor } from "./services/audit/audit-log.js";

/**
 * tRPC setup: the error shape every client sees, and the procedures by role.
 *
 * Error contract: `error.data.appCode` (AppErrorCode), `error.data.fieldErrors`
 * (FieldError[]: zod input problems and validation problems at a field), and
 * `error.message` written for a person. Unexpected errors are logged and
 * answered as INTERNAL without their details.
 */
export interface ApiErrorData {
  appCode: AppErrorCode;
  fieldErrors: FieldError[];
  retryAfterSecs?: number;
}

const ROLE_RANK: Record<Role, number> = { VIEWER: 0, ENGINEER: 1, ADMIN: 2 };

export function hasRole(user: SessionUser, needed: Role): boolean {
  return ROLE_RANK[user.role] >= ROLE_RANK[needed];
}

const t = initTRPC.context<ApiContext>().create({
  errorFormatter({ shape, error }) {
    const cause = error.cause;
    let data: ApiErrorData;
    let message = shape.message;
    if (cause instanceof AppError) {
      data = {
        appCode: cause.code,
        fieldErrors: cause.fieldErrors,
        ...(cause.retryAfterSecs !== undefined ? { retryAfterSecs: cause.retryAfterSecs } : {}),
      };
    } else if (cause instanceof ZodError) {
      const fieldErrors = cause.issues.map((issue) => ({
        path: issue.path.map(String).join("."),
        message: issue.message,
      }));
      data = { appCode: "VALIDATION_FAILED", fieldErrors };
      message = `invalid input: ${fieldErrors.map((field) => (field.path ? `${field.path}: ${field.message}` : field.message)).join("; ")}`;
    } else if (error.code === "INTERNAL_SERVER_ERROR") {
      data = { appCode: "INTERNAL", fieldErrors: [] };
      message = "internal error; the server log has the details";
    } else {
      data = { appCode: appCodeOfTrpc(error.code), fieldErrors: [] };
    }
    const { stack: _stack, ...rest } = shape.data;
    return { ...shape, message, data: { ...rest, ...data } };
  },
});

function appCodeOfTrpc(code: TRPCError["code"]): AppErrorCode {
  const found = (Object.entries(APP_ERROR_TRPC_CODES) as Array<[AppErrorCode, string]>).find(
    ([, trpc]) => trpc === code,
  );
  return found?.[0] ?? "VALIDATION_FAILED";
}

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/** Turns AppErrors into TRPCErrors with the mapped code; logs unexpected errors once. */
const errorMapping = t.middleware(async ({ ctx, next, path }) => {
  const result = await next();
  if (!result.ok) {
    const cause = result.error.cause;
    if (cause instanceof AppError) {
      const internal = cause.internal ? { internal: cause.internal } : {};
      if (cause.code === "INTERNAL" || cause.code === "GATEWAY_ERROR")
        ctx.services.logger.error({ path, code: cause.code, err: cause, ...internal }, cause.message);
      throw new TRPCError({ code: APP_ERROR_TRPC_CODES[cause.code], message: cause.message, cause });
    }
    if (result.error.code === "INTERNAL_SERVER_ERROR")
      ctx.services.logger.error({ path, err: cause ?? result.error }, "unexpected API error");
  }
  return result;
});

/** Mutations change state: over HTTP they must carry the CSRF token. */
const csrfForMutations = t.middleware(({ ctx, type, next }) => {
  if (type === "mutation" && !ctx.csrfVerified) {
    throw new AppError(
      "CSRF_FAILED",
      "this request did not carry the console's CSRF token (X-CSRF-Token header matching the operon_csrf cookie)",
    );
  }
  return next();
});

export const publicProcedure = t.procedure.use(errorMapping).use(csrfForMutations);

const signedIn = t.middleware(({ ctx, next }) => {
  if (!ctx.user) throw new AppError("UNAUTHENTICATED", "sign in first");
  const actor: Actor = { userId: ctx.user.id, ip: ctx.ip };
  return next({ ctx: { ...ctx, user: ctx.user, actor } });
});

function requireRole(role: Role) {
  return t.middleware(({ ctx, next }) => {
    if (!ctx.user) throw new AppError("UNAUTHENTICATED", "sign in first");
    if (!hasRole(ctx.user, role))
      throw new AppError(
        "FORBIDDEN",
        `this needs the ${role.toLowerCase()} role; you are ${ctx.user.role.toLowerCase()}`,
      );
    return next();
  });
}

/** Any signed-in user (viewers read). */
export const viewerProcedure = publicProcedure.use(signedIn);
/** Engineers and admins: models, operators, perf runs, own API keys. */
export const engineerProcedure = viewerProcedure.use(requireRole("ENGINEER"));
/** Admins: users, roles, hardware profiles, everyone's keys, audit. */
export const adminProcedure = viewerProcedure.use(requireRole("ADMIN"));

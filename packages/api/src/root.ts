import { apiKeysRouter } from "./routers/api-keys-router.js";
import { auditRouter } from "./routers/audit-router.js";
import { authRouter } from "./routers/auth-router.js";
import { usersRouter } from "./routers/users-router.js";
import { createCallerFactory, router } from "./trpc.js";

/** The control plane API: one router per area. */
export const appRouter = router({
  auth: authRouter,
  users: usersRouter,
  apiKeys: apiKeysRouter,
  audit: auditRouter,
});

export type AppRouter = typeof appRouter;

export const createCaller = createCallerFactory(appRouter);

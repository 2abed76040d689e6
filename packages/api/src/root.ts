import { apiKeysRouter } from "./routers/api-keys-router.js";
import { auditRouter } from "./routers/audit-router.js";
import { authRouter } from "./routers/auth-router.js";
import { gatewayRouter } from "./routers/gateway-router.js";
import { hardwareRouter } from "./routers/hardware-router.js";
import { metricsRouter } from "./routers/metrics-router.js";
import { modelsRouter } from "./routers/models-router.js";
import { operatorsRouter } from "./routers/operators-router.js";
import { perfRouter } from "./routers/perf-router.js";
import { configSearchRouter } from "./routers/config-search-router.js";
import { schedulerRouter } from "./routers/scheduler-router.js";
import { workersRouter } from "./routers/workers-router.js";
import { tenantsRouter } from "./routers/tenants-router.js";
import { usersRouter } from "./routers/users-router.js";
import { datasetsRouter } from "./routers/datasets-router.js";
import { jobsRouter } from "./routers/jobs-router.js";
import { createCallerFactory, router } from "./trpc.js";

/** The control plane API: one router per area. */
export const appRouter = router({
  auth: authRouter,
  users: usersRouter,
  apiKeys: apiKeysRouter,
  audit: auditRouter,
  operators: operatorsRouter,
  perf: perfRouter,
  configSearch: configSearchRouter,
  metrics: metricsRouter,
  hardware: hardwareRouter,
  workers: workersRouter,
  models: modelsRouter,
  gateway: gatewayRouter,
  tenants: tenantsRouter,
  scheduler: schedulerRouter,
  datasets: datasetsRouter,
  jobs: jobsRouter,
});

export type AppRouter = typeof appRouter;

export const createCaller = createCallerFactory(appRouter);

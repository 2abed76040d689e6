// The control plane API's public surface; everything else is reached through
// the package's "./*" exports by the few callers that need it (tests, CLI).
export { appRouter, createCaller } from "./root.js";
export type { AppRouter } from "./root.js";
export { ControlPlane } from "./control-plane.js";
export { startApiServer, API_BASE_PATH } from "./http/api-server.js";
export type { ApiServer, ApiServerOptions } from "./http/api-server.js";
export type { ControlPlaneOptions } from "./options.js";
export type { ApiErrorData } from "./trpc.js";
export { APP_ERROR_CODES } from "./app-error.js";
export type { AppErrorCode, FieldError } from "./app-error.js";
export { RESOURCE_SCHEDULER_DEFAULTS } from "./services/resource-scheduler/resource-scheduler.js";
export type { ResourceSchedulerOptions } from "./services/resource-scheduler/resource-scheduler.js";

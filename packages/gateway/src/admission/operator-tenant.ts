import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The tenant of the operator request whose steps run now, so that each model
 * step is gated (admission/tenant-shares.ts) as that tenant: an operator
 * request counts the units of all its steps against its tenant's share, and
 * a tenant cannot step around its share by calling an operator instead of
 * its models. Set by the engine around an operator's run only while tenant
 * shares are on and the request has a tenant; the step runner reads it.
 * Async context rather than a parameter: the DAG executor's step calls keep
 * their signature, and a step waiting in a step limiter resumes in its own
 * request's context.
 */
export const operatorTenant = new AsyncLocalStorage<string>();

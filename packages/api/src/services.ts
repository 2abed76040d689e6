import type { PrismaClient } from "@operon/db";
import type { ResolvedControlPlaneOptions } from "./options.js";
import type { ApiKeyService } from "./services/api-keys/api-key-service.js";
import type { GatewayClient } from "./services/gateway/gateway-client.js";
import type { HardwareProfiles } from "./services/costs/hardware-profiles.js";
import type { OperatorRegistry } from "./services/operators/operator-registry.js";
import type { PerfRuns } from "./services/perf/perf-runs.js";
import type { PerfInputsStore } from "./services/perf/perf-inputs.js";
import type { PerfImports } from "./services/perf/perf-imports.js";
import type { ConfigSearches } from "./services/config-search/config-searches.js";
import type { UsageSampler } from "./services/usage/usage-sampler.js";
import type { LoginRateLimiter } from "./services/accounts/login-rate-limiter.js";
import type { ModelServices } from "./services/models/model-services.js";
import type { UploadSessions } from "./services/models/upload-sessions.js";
import type { SessionStore } from "./services/accounts/session-store.js";
import type { Logger } from "@operon/protocol/logger";
import type { TenantGroups } from "./services/tenants/tenant-groups.js";
import type { TenantUsageSampler } from "./services/tenants/tenant-usage-sampler.js";
import type { ResourceScheduler } from "./services/resource-scheduler/resource-scheduler.js";

/**
 * The server-side modules procedures call. Built once per control plane
 * (control-plane.ts) and handed to every request's context.
 */
export interface ApiServices {
  prisma: PrismaClient;
  options: ResolvedControlPlaneOptions;
  logger: Logger;
  sessions: SessionStore;
  apiKeys: ApiKeyService;
  loginLimiter: LoginRateLimiter;
  gateway: GatewayClient;
  /** Operators: stored versions, kept in step with the gateway. */
  operators: OperatorRegistry;
  /** Perf runs in the background, one at a time. */
  perfRuns: PerfRuns;
  /** How perf runs fill each target's inputs (shapes for variable dims, sample data). */
  perfInputs: PerfInputsStore;
  perfImports: PerfImports;
  /** Config searches of uploaded models, in the perf slot. */
  configSearches: ConfigSearches;
  hardware: HardwareProfiles;
  /** Usage samples of the gateway (started by ControlPlane.create when the interval > 0). */
  usageSampler: UsageSampler;
  /** Models: uploads (model store + gateway) and the gateway's repository models. */
  models: ModelServices;
  /** Instances from demand: scales models, unloads idle ones when memory is short (started by ControlPlane.create). */
  resourceScheduler: ResourceScheduler;
  /** Model uploads in progress (staged files, expiry timer). */
  uploads: UploadSessions;
  /** True until the first user exists; the console then offers first-run setup. */
  setup: FirstRunSetup;
  /** Tenants for traffic shares (groups of keys, shares, policies). */
  tenants: TenantGroups;
  /** Each tenant's served units, sampled from the gateway's metrics. */
  tenantSampler: TenantUsageSampler;
}

/**
 * First-run setup: while no user exists, the first admin may be created by
 * whoever holds the setup token that `operon serve` printed to its terminal
 * (or through `operon admin create`). There is no default password.
 */
export interface FirstRunSetup {
  /** The token, or undefined once an admin exists. */
  token: string | undefined;
}

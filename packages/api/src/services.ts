import type { PrismaClient } from "@operon/db";
import type { ApiLogger, ResolvedControlPlaneOptions } from "./options.js";
import type { ApiKeyService } from "./services/api-key-service.js";
import type { GatewayClient } from "./services/gateway-client.js";
import type { LoginRateLimiter } from "./services/login-rate-limiter.js";
import type { SessionStore } from "./services/session-store.js";

/**
 * The server-side modules procedures call. Built once per control plane
 * (control-plane.ts) and handed to every request's context.
 */
export interface ApiServices {
  prisma: PrismaClient;
  options: ResolvedControlPlaneOptions;
  logger: ApiLogger;
  sessions: SessionStore;
  apiKeys: ApiKeyService;
  loginLimiter: LoginRateLimiter;
  gateway: GatewayClient;
  /** True until the first user exists; the console then offers first-run setup. */
  setup: FirstRunSetup;
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

import { randomBytes } from "node:crypto";
import { resolveControlPlaneOptions, type ControlPlaneOptions, type ResolvedControlPlaneOptions } from "./options.js";
import type { ApiServices } from "./services.js";
import { ApiKeyService } from "./services/api-key-service.js";
import { GatewayClient } from "./services/gateway-client.js";
import { LoginRateLimiter } from "./services/login-rate-limiter.js";
import { SessionStore } from "./services/session-store.js";

/**
 * The control plane: the API's services over one database and one gateway,
 * plus its background work. `operon serve` creates one beside the gateway;
 * the HTTP API (http/api-server.ts) and in-process callers share it.
 */
export class ControlPlane {
  private stopped = false;

  private constructor(
    readonly services: ApiServices,
    private readonly backgroundStops: Array<() => Promise<void> | void>,
  ) {}

  static async create(options: ControlPlaneOptions): Promise<ControlPlane> {
    const resolved: ResolvedControlPlaneOptions = resolveControlPlaneOptions(options);
    const prisma = resolved.db.prisma;
    const needsSetup = (await prisma.user.count()) === 0;
    const services: ApiServices = {
      prisma,
      options: resolved,
      logger: resolved.logger,
      sessions: new SessionStore(prisma),
      apiKeys: await ApiKeyService.create(prisma),
      loginLimiter: new LoginRateLimiter(resolved.loginRateLimits),
      gateway: new GatewayClient(resolved.gateway),
      setup: { token: needsSetup ? randomBytes(18).toString("base64url") : undefined },
    };
    const backgroundStops: Array<() => Promise<void> | void> = [];
    return new ControlPlane(services, backgroundStops);
  }

  /** The first-run setup token while no account exists (print it for the person who started Operon). */
  get setupToken(): string | undefined {
    return this.services.setup.token;
  }

  /** Stops background work; the database stays open (its owner closes it). Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const stop of this.backgroundStops.reverse()) await stop();
  }
}

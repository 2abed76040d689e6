import type { Database } from "@operon/db";
import type { GatewayClientOptions } from "./services/gateway/gateway-client.js";
import { DEFAULT_LOGIN_RATE_LIMITS, type LoginRateLimits } from "./services/accounts/login-rate-limiter.js";
import type { Logger } from "@operon/protocol/logger";

/** What the control plane needs; the CLI builds it from flags, tests from fixtures. */
export interface ControlPlaneOptions {
  /** An open, migrated database (see @operon/db openAndMigrate). */
  db: Database;
  gateway: GatewayClientOptions;
  /**
   * The Triton model repository that uploads are stored in
   * (`<dir>/<model>/<version>/...` + config.pbtxt). The gateway serves it as
   * one of its --model-repository folders.
   */
  modelStoreDir: string;
  /** Where upload chunks are staged until an upload is finished or abandoned. */
  uploadStagingDir: string;
  /** Largest model file accepted (default 512 MiB). */
  maxUploadBytes?: number;
  /** Seconds between usage samples of the gateway (default 15; 0 = no background sampling). */
  usageSampleIntervalSecs?: number;
  /**
   * Days usage samples are kept (default 30, the longest range the console
   * charts; 0 = forever). Older samples are deleted at start and hourly.
   */
  usageRetentionDays?: number;
  /** Mark cookies Secure (set when the console is served over HTTPS). */
  secureCookies?: boolean;
  loginRateLimits?: LoginRateLimits;
  logger?: Logger;
}

export const CONTROL_PLANE_DEFAULTS = {
  maxUploadBytes: 512 * 1024 * 1024,
  usageSampleIntervalSecs: 15,
  usageRetentionDays: 30,
  secureCookies: false,
  loginRateLimits: DEFAULT_LOGIN_RATE_LIMITS,
} as const;

export type ResolvedControlPlaneOptions = Required<Omit<ControlPlaneOptions, "logger">> & { logger: Logger };

export const SILENT_LOGGER: Logger = { info: () => {}, warn: () => {}, error: () => {} };

export function resolveControlPlaneOptions(options: ControlPlaneOptions): ResolvedControlPlaneOptions {
  return {
    ...CONTROL_PLANE_DEFAULTS,
    ...Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)),
    logger: options.logger ?? SILENT_LOGGER,
  } as ResolvedControlPlaneOptions;
}

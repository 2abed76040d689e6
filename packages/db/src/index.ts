export { openDatabase, openAndMigrate, isPostgresUrl, DEFAULT_DATA_DIR } from "./database.js";
export type { Database, DatabaseKind, OpenDatabaseOptions } from "./database.js";
export { AdvisoryLockTimeoutError, DEFAULT_LOCK_WAIT_TIMEOUT_MS } from "./advisory-locks.js";
export type { AdvisoryLocks } from "./advisory-locks.js";
export { migrate, readMigrations, checksumOf, defaultMigrationsDir, MigrationError } from "./migrate.js";
export type { MigrateResult, MigrationFile, MigrationSource, SqlConnection } from "./migrate.js";
export { PrismaClient, Prisma } from "./generated/prisma/client.js";
// Named, not `export *`: what the rest of Operon may use of the generated client is listed here.
export { Role, ModelVersionState, PerfRunStatus, PerfTargetKind, HardwareKind } from "./generated/prisma/enums.js";
export { PerfTrigger } from "./generated/prisma/enums.js";
export { ConfigSearchStatus, ConfigSearchObjective } from "./generated/prisma/enums.js";
export { TenantPolicy } from "./generated/prisma/enums.js";
export { SchedulerAction } from "./generated/prisma/enums.js";
export { DatasetSource, DatasetFormat, BatchJobState } from "./generated/prisma/enums.js";
export type { ModelGetPayload } from "./generated/prisma/models.js";
export type {
  User,
  Session,
  ApiKey,
  Model,
  ModelVersion,
  Operator,
  OperatorVersion,
  HardwareProfile,
  PerfReport,
  PerfSample,
  UsageSample,
  TenantGroup,
  TenantUsageSample,
  AuditEvent,
  AutoPerfSettings,
  ConfigSearch,
  ConfigSearchCandidate,
  Dataset,
  BatchJob,
  BatchJobFailure,
} from "./generated/prisma/client.js";
export { announceChange, ChangeListener, CHANGE_CHANNEL } from "./change-channel.js";
export { connectedGateways, gatewaySessionName, GATEWAY_SESSION_PREFIX } from "./change-channel.js";
export type { ChangeTopic, ChangeListenerOptions, GatewaySession } from "./change-channel.js";

export { openDatabase, openAndMigrate, isPostgresUrl, DEFAULT_DATA_DIR } from "./database.js";
export type { Database, DatabaseKind, OpenDatabaseOptions } from "./database.js";
export { migrate, readMigrations, checksumOf, defaultMigrationsDir, MigrationError } from "./migrate.js";
export type { MigrateResult, MigrationFile, MigrationSource, SqlConnection } from "./migrate.js";
export { PrismaClient, Prisma } from "./generated/prisma/client.js";
export * from "./generated/prisma/enums.js";
export type * from "./generated/prisma/models.js";
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
  AuditEvent,
} from "./generated/prisma/client.js";

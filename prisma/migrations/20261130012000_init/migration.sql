-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "Role" AS ENUM ('ADMIN', 'ENGINEER', 'VIEWER');

-- CreateEnum
CREATE TYPE "ModelVersionState" AS ENUM ('UPLOADING', 'READY', 'LOADING', 'LOADED', 'UNLOADED', 'FAILED', 'ARCHIVED');

-- CreateEnum
CREATE TYPE "HardwareKind" AS ENUM ('CPU', 'GPU');

-- CreateTable
CREATE TABLE "User" (
    "id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "name" TEXT,
    "passwordHash" TEXT,
    "role" "Role" NOT NULL DEFAULT 'VIEWER',
    "disabled" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "lastLoginAt" TIMESTAMP(3),

    CONSTRAINT "User_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Session" (
    "id" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "lastSeenAt" TIMESTAMP(3),
    "ip" TEXT,
    "userAgent" TEXT,
    "revokedAt" TIMESTAMP(3),

    CONSTRAINT "Session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiKey" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "keyHash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "scopes" TEXT[],
    "ownerId" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3),
    "lastUsedAt" TIMESTAMP(3),
    "revokedAt" TIMESTAMP(3),
    "priorityLevel" INTEGER NOT NULL DEFAULT 0,
    "qpsQuota" INTEGER,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ApiKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Model" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "platform" TEXT,
    "ownerId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Model_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ModelVersion" (
    "id" TEXT NOT NULL,
    "modelId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "artifactUri" TEXT NOT NULL,
    "sizeBytes" BIGINT NOT NULL,
    "sha256" TEXT NOT NULL,
    "config" JSONB,
    "state" "ModelVersionState" NOT NULL DEFAULT 'UPLOADING',
    "stateMessage" TEXT,
    "uploadedById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ModelVersion_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Operator" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "ownerId" TEXT,
    "spec" JSONB NOT NULL,
    "latestVersion" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Operator_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "OperatorVersion" (
    "id" TEXT NOT NULL,
    "operatorId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "spec" JSONB NOT NULL,
    "createdById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "OperatorVersion_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "HardwareProfile" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "kind" "HardwareKind" NOT NULL,
    "cpuCores" INTEGER,
    "memoryBytes" BIGINT,
    "gpuModel" TEXT,
    "gpuCount" INTEGER NOT NULL DEFAULT 0,
    "gpuMemoryBytes" BIGINT,
    "costPerHour" DECIMAL(12,4) NOT NULL,
    "currency" TEXT NOT NULL DEFAULT 'USD',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "HardwareProfile_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PerfReport" (
    "id" TEXT NOT NULL,
    "modelId" TEXT NOT NULL,
    "modelVersionId" TEXT,
    "hardwareProfileId" TEXT,
    "createdById" TEXT,
    "config" JSONB,
    "summary" JSONB,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "PerfReport_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PerfSample" (
    "id" TEXT NOT NULL,
    "reportId" TEXT NOT NULL,
    "concurrency" INTEGER NOT NULL,
    "batchSize" INTEGER NOT NULL DEFAULT 1,
    "throughput" DOUBLE PRECISION NOT NULL,
    "latencyAvgUs" DOUBLE PRECISION,
    "latencyP50Us" DOUBLE PRECISION,
    "latencyP90Us" DOUBLE PRECISION,
    "latencyP95Us" DOUBLE PRECISION,
    "latencyP99Us" DOUBLE PRECISION,
    "queueUs" DOUBLE PRECISION,
    "computeUs" DOUBLE PRECISION,
    "errorCount" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "PerfSample_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "UsageSample" (
    "id" BIGSERIAL NOT NULL,
    "modelId" TEXT NOT NULL,
    "modelVersion" INTEGER,
    "hardwareProfileId" TEXT,
    "at" TIMESTAMP(3) NOT NULL,
    "intervalSeconds" INTEGER NOT NULL,
    "requests" INTEGER NOT NULL DEFAULT 0,
    "errors" INTEGER NOT NULL DEFAULT 0,
    "latencyP50Ms" DOUBLE PRECISION,
    "latencyP90Ms" DOUBLE PRECISION,
    "latencyP99Ms" DOUBLE PRECISION,
    "queueTimeMs" DOUBLE PRECISION,
    "instanceCount" INTEGER NOT NULL DEFAULT 0,
    "cpuUtilization" DOUBLE PRECISION,
    "gpuUtilization" DOUBLE PRECISION,

    CONSTRAINT "UsageSample_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AuditEvent" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actorId" TEXT,
    "apiKeyId" TEXT,
    "action" TEXT NOT NULL,
    "targetType" TEXT NOT NULL,
    "targetId" TEXT,
    "before" JSONB,
    "after" JSONB,
    "ip" TEXT,

    CONSTRAINT "AuditEvent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "User_email_key" ON "User"("email");

-- CreateIndex
CREATE UNIQUE INDEX "Session_tokenHash_key" ON "Session"("tokenHash");

-- CreateIndex
CREATE INDEX "Session_userId_idx" ON "Session"("userId");

-- CreateIndex
CREATE INDEX "Session_expiresAt_idx" ON "Session"("expiresAt");

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_keyHash_key" ON "ApiKey"("keyHash");

-- CreateIndex
CREATE INDEX "ApiKey_ownerId_idx" ON "ApiKey"("ownerId");

-- CreateIndex
CREATE INDEX "ApiKey_prefix_idx" ON "ApiKey"("prefix");

-- CreateIndex
CREATE UNIQUE INDEX "Model_name_key" ON "Model"("name");

-- CreateIndex
CREATE INDEX "Model_ownerId_idx" ON "Model"("ownerId");

-- CreateIndex
CREATE INDEX "ModelVersion_state_idx" ON "ModelVersion"("state");

-- CreateIndex
CREATE INDEX "ModelVersion_uploadedById_idx" ON "ModelVersion"("uploadedById");

-- CreateIndex
CREATE UNIQUE INDEX "ModelVersion_modelId_version_key" ON "ModelVersion"("modelId", "version");

-- CreateIndex
CREATE UNIQUE INDEX "Operator_name_key" ON "Operator"("name");

-- CreateIndex
CREATE INDEX "Operator_ownerId_idx" ON "Operator"("ownerId");

-- CreateIndex
CREATE INDEX "OperatorVersion_createdById_idx" ON "OperatorVersion"("createdById");

-- CreateIndex
CREATE UNIQUE INDEX "OperatorVersion_operatorId_version_key" ON "OperatorVersion"("operatorId", "version");

-- CreateIndex
CREATE UNIQUE INDEX "HardwareProfile_name_key" ON "HardwareProfile"("name");

-- CreateIndex
CREATE INDEX "PerfReport_modelId_createdAt_idx" ON "PerfReport"("modelId", "createdAt");

-- CreateIndex
CREATE INDEX "PerfReport_modelVersionId_idx" ON "PerfReport"("modelVersionId");

-- CreateIndex
CREATE INDEX "PerfReport_hardwareProfileId_idx" ON "PerfReport"("hardwareProfileId");

-- CreateIndex
CREATE INDEX "PerfReport_createdById_idx" ON "PerfReport"("createdById");

-- CreateIndex
CREATE INDEX "PerfSample_reportId_idx" ON "PerfSample"("reportId");

-- CreateIndex
CREATE INDEX "UsageSample_modelId_at_idx" ON "UsageSample"("modelId", "at");

-- CreateIndex
CREATE INDEX "UsageSample_at_idx" ON "UsageSample"("at");

-- CreateIndex
CREATE INDEX "UsageSample_hardwareProfileId_idx" ON "UsageSample"("hardwareProfileId");

-- CreateIndex
CREATE INDEX "AuditEvent_at_idx" ON "AuditEvent"("at");

-- CreateIndex
CREATE INDEX "AuditEvent_actorId_at_idx" ON "AuditEvent"("actorId", "at");

-- CreateIndex
CREATE INDEX "AuditEvent_targetType_targetId_idx" ON "AuditEvent"("targetType", "targetId");

-- AddForeignKey
ALTER TABLE "Session" ADD CONSTRAINT "Session_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_ownerId_fkey" FOREIGN KEY ("ownerId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Model" ADD CONSTRAINT "Model_ownerId_fkey" FOREIGN KEY ("ownerId") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ModelVersion" ADD CONSTRAINT "ModelVersion_modelId_fkey" FOREIGN KEY ("modelId") REFERENCES "Model"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ModelVersion" ADD CONSTRAINT "ModelVersion_uploadedById_fkey" FOREIGN KEY ("uploadedById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Operator" ADD CONSTRAINT "Operator_ownerId_fkey" FOREIGN KEY ("ownerId") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "OperatorVersion" ADD CONSTRAINT "OperatorVersion_operatorId_fkey" FOREIGN KEY ("operatorId") REFERENCES "Operator"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "OperatorVersion" ADD CONSTRAINT "OperatorVersion_createdById_fkey" FOREIGN KEY ("createdById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PerfReport" ADD CONSTRAINT "PerfReport_modelId_fkey" FOREIGN KEY ("modelId") REFERENCES "Model"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PerfReport" ADD CONSTRAINT "PerfReport_modelVersionId_fkey" FOREIGN KEY ("modelVersionId") REFERENCES "ModelVersion"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PerfReport" ADD CONSTRAINT "PerfReport_hardwareProfileId_fkey" FOREIGN KEY ("hardwareProfileId") REFERENCES "HardwareProfile"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PerfReport" ADD CONSTRAINT "PerfReport_createdById_fkey" FOREIGN KEY ("createdById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PerfSample" ADD CONSTRAINT "PerfSample_reportId_fkey" FOREIGN KEY ("reportId") REFERENCES "PerfReport"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "UsageSample" ADD CONSTRAINT "UsageSample_modelId_fkey" FOREIGN KEY ("modelId") REFERENCES "Model"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "UsageSample" ADD CONSTRAINT "UsageSample_hardwareProfileId_fkey" FOREIGN KEY ("hardwareProfileId") REFERENCES "HardwareProfile"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AuditEvent" ADD CONSTRAINT "AuditEvent_actorId_fkey" FOREIGN KEY ("actorId") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

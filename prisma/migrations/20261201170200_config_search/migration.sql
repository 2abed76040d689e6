-- CreateEnum
CREATE TYPE "ConfigSearchStatus" AS ENUM ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED');

-- CreateEnum
CREATE TYPE "ConfigSearchObjective" AS ENUM ('MAX_THROUGHPUT', 'MIN_COST');

-- CreateTable
CREATE TABLE "ConfigSearch" (
    "id" TEXT NOT NULL,
    "modelId" TEXT NOT NULL,
    "modelName" TEXT NOT NULL,
    "status" "ConfigSearchStatus" NOT NULL DEFAULT 'RUNNING',
    "objective" "ConfigSearchObjective" NOT NULL,
    "p99BudgetUs" DOUBLE PRECISION NOT NULL,
    "plan" JSONB NOT NULL,
    "baseConfig" JSONB NOT NULL,
    "hardware" JSONB,
    "recommendedIndex" INTEGER,
    "stopReason" TEXT,
    "error" TEXT,
    "createdById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMP(3),
    "appliedIndex" INTEGER,
    "appliedAt" TIMESTAMP(3),

    CONSTRAINT "ConfigSearch_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ConfigSearchCandidate" (
    "id" TEXT NOT NULL,
    "searchId" TEXT NOT NULL,
    "index" INTEGER NOT NULL,
    "dimension" TEXT NOT NULL,
    "instanceCount" INTEGER NOT NULL,
    "maxBatchSize" INTEGER NOT NULL,
    "dynamicBatching" JSONB,
    "config" JSONB NOT NULL,
    "throughput" DOUBLE PRECISION NOT NULL,
    "latencyP99Us" DOUBLE PRECISION,
    "concurrency" INTEGER NOT NULL,
    "costPer1000" DOUBLE PRECISION,
    "withinBudget" BOOLEAN NOT NULL,
    "steps" JSONB NOT NULL,
    "error" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ConfigSearchCandidate_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ConfigSearch_modelId_createdAt_idx" ON "ConfigSearch"("modelId", "createdAt");

-- CreateIndex
CREATE INDEX "ConfigSearch_status_idx" ON "ConfigSearch"("status");

-- CreateIndex
CREATE UNIQUE INDEX "ConfigSearchCandidate_searchId_index_key" ON "ConfigSearchCandidate"("searchId", "index");

-- AddForeignKey
ALTER TABLE "ConfigSearch" ADD CONSTRAINT "ConfigSearch_modelId_fkey" FOREIGN KEY ("modelId") REFERENCES "Model"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ConfigSearchCandidate" ADD CONSTRAINT "ConfigSearchCandidate_searchId_fkey" FOREIGN KEY ("searchId") REFERENCES "ConfigSearch"("id") ON DELETE CASCADE ON UPDATE CASCADE;

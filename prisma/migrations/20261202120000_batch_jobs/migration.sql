-- CreateEnum
CREATE TYPE "DatasetSource" AS ENUM ('UPLOAD', 'SERVER_PATH', 'JOB_RESULT');

-- CreateEnum
CREATE TYPE "DatasetFormat" AS ENUM ('CSV', 'JSONL', 'PARQUET');

-- CreateEnum
CREATE TYPE "BatchJobState" AS ENUM ('QUEUED', 'RUNNING', 'PAUSED', 'CANCELLED', 'DONE', 'FAILED');

-- CreateTable
CREATE TABLE "Dataset" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "ownerId" TEXT,
    "source" "DatasetSource" NOT NULL,
    "format" "DatasetFormat" NOT NULL,
    "path" TEXT NOT NULL,
    "query" TEXT NOT NULL,
    "keyColumns" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Dataset_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "BatchJob" (
    "id" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "ownerId" TEXT,
    "targetKind" "PerfTargetKind" NOT NULL,
    "targetName" TEXT NOT NULL,
    "targetVersion" TEXT,
    "mapping" JSONB NOT NULL,
    "outputs" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "state" "BatchJobState" NOT NULL DEFAULT 'QUEUED',
    "error" TEXT,
    "totalRows" INTEGER,
    "doneRanges" JSONB NOT NULL DEFAULT '[]',
    "parts" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "doneRows" INTEGER NOT NULL DEFAULT 0,
    "failedRows" INTEGER NOT NULL DEFAULT 0,
    "concurrency" INTEGER NOT NULL DEFAULT 1,
    "rowsPerSec" DOUBLE PRECISION,
    "resultDatasetId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "BatchJob_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "BatchJobFailure" (
    "jobId" TEXT NOT NULL,
    "row" INTEGER NOT NULL,
    "error" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 1,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "BatchJobFailure_pkey" PRIMARY KEY ("jobId","row")
);

-- CreateIndex
CREATE UNIQUE INDEX "Dataset_name_key" ON "Dataset"("name");

-- CreateIndex
CREATE INDEX "Dataset_ownerId_idx" ON "Dataset"("ownerId");

-- CreateIndex
CREATE INDEX "BatchJob_ownerId_createdAt_idx" ON "BatchJob"("ownerId", "createdAt");

-- CreateIndex
CREATE INDEX "BatchJob_state_idx" ON "BatchJob"("state");

-- CreateIndex
CREATE INDEX "BatchJob_datasetId_idx" ON "BatchJob"("datasetId");

-- AddForeignKey
ALTER TABLE "Dataset" ADD CONSTRAINT "Dataset_ownerId_fkey" FOREIGN KEY ("ownerId") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "BatchJob" ADD CONSTRAINT "BatchJob_datasetId_fkey" FOREIGN KEY ("datasetId") REFERENCES "Dataset"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "BatchJob" ADD CONSTRAINT "BatchJob_ownerId_fkey" FOREIGN KEY ("ownerId") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "BatchJobFailure" ADD CONSTRAINT "BatchJobFailure_jobId_fkey" FOREIGN KEY ("jobId") REFERENCES "BatchJob"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- CreateEnum
CREATE TYPE "PerfTrigger" AS ENUM ('MANUAL', 'AUTOMATIC');

-- AlterEnum
ALTER TYPE "PerfRunStatus" ADD VALUE 'QUEUED';

-- AlterTable
ALTER TABLE "PerfReport" ADD COLUMN     "cause" TEXT,
ADD COLUMN     "hostLoad" JSONB,
ADD COLUMN     "startedAt" TIMESTAMP(3),
ADD COLUMN     "trigger" "PerfTrigger" NOT NULL DEFAULT 'MANUAL';

-- CreateTable
CREATE TABLE "AutoPerfSettings" (
    "id" TEXT NOT NULL DEFAULT 'default',
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "maxConcurrency" INTEGER NOT NULL DEFAULT 32,
    "measurementIntervalMs" INTEGER NOT NULL DEFAULT 2000,
    "maxTrials" INTEGER NOT NULL DEFAULT 5,
    "timeBoundSecs" INTEGER NOT NULL DEFAULT 60,
    "minGainPercent" DOUBLE PRECISION NOT NULL DEFAULT 5,
    "headroomMaxRequestsPerSec" DOUBLE PRECISION NOT NULL DEFAULT 1,
    "maxWaitSecs" INTEGER NOT NULL DEFAULT 600,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "updatedById" TEXT,

    CONSTRAINT "AutoPerfSettings_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "PerfReport_status_createdAt_idx" ON "PerfReport"("status", "createdAt");

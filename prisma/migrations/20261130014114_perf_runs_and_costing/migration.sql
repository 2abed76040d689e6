-- CreateEnum
CREATE TYPE "PerfRunStatus" AS ENUM ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED');

-- CreateEnum
CREATE TYPE "PerfTargetKind" AS ENUM ('MODEL', 'OPERATOR');

-- AlterTable
ALTER TABLE "HardwareProfile" ADD COLUMN     "isDefault" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "PerfReport" ADD COLUMN     "error" TEXT,
ADD COLUMN     "finishedAt" TIMESTAMP(3),
ADD COLUMN     "operatorId" TEXT,
ADD COLUMN     "status" "PerfRunStatus" NOT NULL DEFAULT 'RUNNING',
ADD COLUMN     "targetKind" "PerfTargetKind" NOT NULL DEFAULT 'MODEL',
ADD COLUMN     "targetName" TEXT NOT NULL,
ADD COLUMN     "targetVersion" TEXT,
ALTER COLUMN "modelId" DROP NOT NULL;

-- AlterTable
ALTER TABLE "UsageSample" ADD COLUMN     "latencyP95Ms" DOUBLE PRECISION,
ADD COLUMN     "memoryBytes" BIGINT;

-- CreateIndex
CREATE INDEX "PerfReport_operatorId_createdAt_idx" ON "PerfReport"("operatorId", "createdAt");

-- CreateIndex
CREATE INDEX "PerfReport_createdAt_idx" ON "PerfReport"("createdAt");

-- AddForeignKey
ALTER TABLE "PerfReport" ADD CONSTRAINT "PerfReport_operatorId_fkey" FOREIGN KEY ("operatorId") REFERENCES "Operator"("id") ON DELETE CASCADE ON UPDATE CASCADE;

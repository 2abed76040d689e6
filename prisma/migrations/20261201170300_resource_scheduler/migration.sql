-- CreateEnum
CREATE TYPE "SchedulerAction" AS ENUM ('SCALE_UP', 'SCALE_DOWN', 'UNLOAD', 'LOAD', 'HOLD');

-- CreateTable
CREATE TABLE "SchedulerDecision" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "model" TEXT NOT NULL,
    "action" "SchedulerAction" NOT NULL,
    "fromCount" INTEGER NOT NULL,
    "toCount" INTEGER NOT NULL,
    "demandRps" DOUBLE PRECISION,
    "capacityRps" DOUBLE PRECISION,
    "capacitySource" TEXT,
    "headroom" DOUBLE PRECISION,
    "reason" TEXT NOT NULL,
    "inputs" JSONB,
    "applied" BOOLEAN NOT NULL DEFAULT true,
    "error" TEXT,

    CONSTRAINT "SchedulerDecision_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SchedulerPin" (
    "model" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "pinnedById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SchedulerPin_pkey" PRIMARY KEY ("model")
);

-- CreateTable
CREATE TABLE "SchedulerSetting" (
    "id" TEXT NOT NULL DEFAULT 'default',
    "enabled" BOOLEAN NOT NULL,
    "updatedById" TEXT,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "SchedulerSetting_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "SchedulerDecision_at_idx" ON "SchedulerDecision"("at");

-- CreateIndex
CREATE INDEX "SchedulerDecision_model_at_idx" ON "SchedulerDecision"("model", "at");

-- Issue 23: the resource scheduler's desired gateway replica count (one row), and tenant usage samples per gateway
-- (null is the control plane's own gateway, as every earlier sample was).
-- AlterTable
ALTER TABLE "TenantUsageSample" ADD COLUMN     "gatewayHost" TEXT;

-- CreateTable
CREATE TABLE "GatewayReplicas" (
    "id" TEXT NOT NULL DEFAULT 'default',
    "desired" INTEGER NOT NULL,
    "reason" TEXT NOT NULL,
    "inputs" JSONB NOT NULL,
    "changedAt" TIMESTAMP(3) NOT NULL,
    "decidedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "GatewayReplicas_pkey" PRIMARY KEY ("id")
);

-- CreateEnum
CREATE TYPE "TenantPolicy" AS ENUM ('QUEUE', 'REFUSE');

-- AlterTable
ALTER TABLE "ApiKey" ADD COLUMN     "tenantGroupId" TEXT;

-- CreateTable
CREATE TABLE "TenantGroup" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "share" DOUBLE PRECISION NOT NULL,
    "policy" "TenantPolicy" NOT NULL DEFAULT 'QUEUE',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "TenantGroup_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TenantUsageSample" (
    "id" BIGSERIAL NOT NULL,
    "tenant" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL,
    "intervalSeconds" INTEGER NOT NULL,
    "units" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "requests" INTEGER NOT NULL DEFAULT 0,
    "throttled" INTEGER NOT NULL DEFAULT 0,
    "share" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "TenantUsageSample_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "TenantGroup_name_key" ON "TenantGroup"("name");

-- CreateIndex
CREATE INDEX "TenantUsageSample_tenant_at_idx" ON "TenantUsageSample"("tenant", "at");

-- CreateIndex
CREATE INDEX "TenantUsageSample_at_idx" ON "TenantUsageSample"("at");

-- CreateIndex
CREATE INDEX "ApiKey_tenantGroupId_idx" ON "ApiKey"("tenantGroupId");

-- AddForeignKey
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_tenantGroupId_fkey" FOREIGN KEY ("tenantGroupId") REFERENCES "TenantGroup"("id") ON DELETE SET NULL ON UPDATE CASCADE;

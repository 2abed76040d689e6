-- Usage samples per gateway (issue 23): null is the control plane's own gateway, as every earlier sample was.
ALTER TABLE "UsageSample" ADD COLUMN "gatewayHost" TEXT;
ALTER TABLE "OperatorUsageSample" ADD COLUMN "gatewayHost" TEXT;

-- CreateTable
CREATE TABLE "ControlPlaneKey" (
    "id" TEXT NOT NULL,
    "keyHash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revokedAt" TIMESTAMP(3),

    CONSTRAINT "ControlPlaneKey_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "ControlPlaneKey_keyHash_key" ON "ControlPlaneKey"("keyHash");

-- CreateIndex
CREATE INDEX "ControlPlaneKey_revokedAt_idx" ON "ControlPlaneKey"("revokedAt");

-- CreateTable
CREATE TABLE "OperatorUsageSample" (
    "id" BIGSERIAL NOT NULL,
    "operator" TEXT NOT NULL,
    "hardwareProfileId" TEXT,
    "at" TIMESTAMP(3) NOT NULL,
    "intervalSeconds" INTEGER NOT NULL,
    "requests" INTEGER NOT NULL DEFAULT 0,
    "inferences" INTEGER NOT NULL DEFAULT 0,
    "cpuUtilization" DOUBLE PRECISION,
    "gpuUtilization" DOUBLE PRECISION,

    CONSTRAINT "OperatorUsageSample_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "OperatorUsageSample_operator_at_idx" ON "OperatorUsageSample"("operator", "at");

-- CreateIndex
CREATE INDEX "OperatorUsageSample_at_idx" ON "OperatorUsageSample"("at");

-- CreateIndex
CREATE INDEX "OperatorUsageSample_hardwareProfileId_idx" ON "OperatorUsageSample"("hardwareProfileId");

-- AddForeignKey
ALTER TABLE "OperatorUsageSample" ADD CONSTRAINT "OperatorUsageSample_hardwareProfileId_fkey" FOREIGN KEY ("hardwareProfileId") REFERENCES "HardwareProfile"("id") ON DELETE SET NULL ON UPDATE CASCADE;

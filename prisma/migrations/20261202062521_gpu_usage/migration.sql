-- AlterTable
ALTER TABLE "HardwareProfile" ADD COLUMN     "gpuPriceShare" DOUBLE PRECISION;

-- AlterTable
ALTER TABLE "UsageSample" ADD COLUMN     "gpuMemoryBytes" BIGINT;

-- AlterTable
ALTER TABLE "PerfSample" ADD COLUMN     "stepTimes" JSONB;

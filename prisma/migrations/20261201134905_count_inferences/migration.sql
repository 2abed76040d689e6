-- AlterTable
ALTER TABLE "UsageSample" ADD COLUMN     "inferences" INTEGER NOT NULL DEFAULT 0;

-- Samples taken before this column counted requests only; a request of one item was the common case, so they carry over as successful requests.
UPDATE "UsageSample" SET "inferences" = greatest(0, "requests" - "errors");

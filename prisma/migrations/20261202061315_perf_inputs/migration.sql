-- CreateTable
CREATE TABLE "PerfInputs" (
    "targetKind" "PerfTargetKind" NOT NULL,
    "targetName" TEXT NOT NULL,
    "shapes" JSONB NOT NULL DEFAULT '{}',
    "dataKind" TEXT NOT NULL DEFAULT 'random',
    "data" JSONB,
    "dataName" TEXT,
    "dataBytes" INTEGER NOT NULL DEFAULT 0,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "updatedById" TEXT,

    CONSTRAINT "PerfInputs_pkey" PRIMARY KEY ("targetKind","targetName")
);

-- CreateTable
CREATE TABLE "BatchJobSample" (
    "jobId" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL,
    "intervalMs" INTEGER NOT NULL,
    "rows" INTEGER NOT NULL,
    "requests" INTEGER NOT NULL,

    CONSTRAINT "BatchJobSample_pkey" PRIMARY KEY ("jobId","at")
);

-- CreateIndex
CREATE INDEX "BatchJobSample_at_idx" ON "BatchJobSample"("at");

-- AddForeignKey
ALTER TABLE "BatchJobSample" ADD CONSTRAINT "BatchJobSample_jobId_fkey" FOREIGN KEY ("jobId") REFERENCES "BatchJob"("id") ON DELETE CASCADE ON UPDATE CASCADE;

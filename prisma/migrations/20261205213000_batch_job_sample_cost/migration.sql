-- A job's cost is kept per throughput sample once settled (issue 24), so it no longer shrinks as usage samples
-- pass retention or are compacted.
ALTER TABLE "BatchJobSample" ADD COLUMN "cost" JSONB;

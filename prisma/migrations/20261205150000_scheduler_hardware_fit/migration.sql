-- Hardware fit (issue 25): the scheduler moves a model between CPU and GPU by cost.
ALTER TYPE "SchedulerAction" ADD VALUE 'MOVE';

ALTER TABLE "SchedulerDecision" ADD COLUMN "kind" TEXT;

-- The operator whose demand caused a resource scheduler decision (issue 25).
ALTER TABLE "SchedulerDecision" ADD COLUMN "operator" TEXT;

CREATE INDEX "SchedulerDecision_operator_at_idx" ON "SchedulerDecision"("operator", "at");

-- A job spreads its rows over every gateway of a cluster (issue 24): rows served per gateway, and the hash of the
-- running job's key so the cluster's gateways accept it.
ALTER TABLE "BatchJob" ADD COLUMN "gatewayRows" JSONB NOT NULL DEFAULT '{}';
ALTER TABLE "BatchJob" ADD COLUMN "keyHash" TEXT;

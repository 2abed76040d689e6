-- A job may ask how many rows one of its requests carries (issue 24); null: the server's default.
ALTER TABLE "BatchJob" ADD COLUMN "rowsPerRequest" INTEGER;

-- AlterEnum
ALTER TYPE "DatasetSource" ADD VALUE 'POSTGRES';

-- AlterEnum
ALTER TYPE "DatasetFormat" ADD VALUE 'POSTGRES_TABLE';

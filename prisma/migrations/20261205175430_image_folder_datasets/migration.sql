-- AlterEnum
ALTER TYPE "DatasetFormat" ADD VALUE 'IMAGE_FOLDER';

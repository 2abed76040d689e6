-- CreateTable
CREATE TABLE "CodeUploadSetting" (
    "id" TEXT NOT NULL DEFAULT 'default',
    "adminsOnly" BOOLEAN NOT NULL,
    "updatedById" TEXT,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "CodeUploadSetting_pkey" PRIMARY KEY ("id")
);

-- AlterTable
ALTER TABLE "conversations" ADD COLUMN     "thread_holder" TEXT,
ADD COLUMN     "thread_holder_since" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "messages" ADD COLUMN     "history" BOOLEAN NOT NULL DEFAULT false;

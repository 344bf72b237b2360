-- AlterTable
ALTER TABLE "conversations" ADD COLUMN     "resolution" TEXT NOT NULL DEFAULT 'open',
ADD COLUMN     "snoozed_until" TIMESTAMPTZ(3);

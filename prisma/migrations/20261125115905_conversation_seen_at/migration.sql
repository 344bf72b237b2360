-- AlterTable
ALTER TABLE "conversations" ADD COLUMN     "seen_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "bot_inbox" ADD COLUMN     "abnormal_runs" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "run_started_at" TIMESTAMPTZ(3),
ADD COLUMN     "set_aside_at" TIMESTAMPTZ(3),
ADD COLUMN     "set_aside_reason" TEXT;

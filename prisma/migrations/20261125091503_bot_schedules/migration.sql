-- AlterTable: the inbox becomes an inbox of events; the rows it holds are messages (backfilled).
ALTER TABLE "bot_inbox" DROP CONSTRAINT "bot_inbox_pkey",
ADD COLUMN     "key" TEXT,
ADD COLUMN     "kind" TEXT,
ADD COLUMN     "run_id" BIGINT,
ALTER COLUMN "message_id" DROP NOT NULL;
UPDATE "bot_inbox" SET "key" = 'message:' || "message_id", "kind" = 'message';
ALTER TABLE "bot_inbox" ALTER COLUMN "key" SET NOT NULL,
ALTER COLUMN "kind" SET NOT NULL,
ADD CONSTRAINT "bot_inbox_pkey" PRIMARY KEY ("key");

-- CreateTable
CREATE TABLE "bot_schedules" (
    "project_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "cron" TEXT NOT NULL,
    "time_zone" TEXT NOT NULL,
    "deployment_id" TEXT NOT NULL,
    "source" TEXT,
    "next_run_at" TIMESTAMPTZ(3),
    "armed_for" TIMESTAMPTZ(3),
    "paused_at" TIMESTAMPTZ(3),
    "paused_by" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "bot_schedules_pkey" PRIMARY KEY ("project_id","name")
);

-- CreateTable
CREATE TABLE "bot_schedule_runs" (
    "id" BIGSERIAL NOT NULL,
    "project_id" TEXT NOT NULL,
    "schedule" TEXT NOT NULL,
    "due_at" TIMESTAMPTZ(3) NOT NULL,
    "trigger" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "duration_ms" INTEGER,
    "error" TEXT,
    "error_file" TEXT,
    "error_line" INTEGER,
    "error_column" INTEGER,
    "deployment_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "bot_schedule_runs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "bot_schedules_next_run_at_idx" ON "bot_schedules"("next_run_at");

-- CreateIndex
CREATE INDEX "bot_schedule_runs_project_id_schedule_id_idx" ON "bot_schedule_runs"("project_id", "schedule", "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "bot_schedule_runs_project_id_schedule_due_at_key" ON "bot_schedule_runs"("project_id", "schedule", "due_at");

-- CreateIndex
CREATE UNIQUE INDEX "bot_inbox_message_id_key" ON "bot_inbox"("message_id");

-- CreateIndex
CREATE UNIQUE INDEX "bot_inbox_run_id_key" ON "bot_inbox"("run_id");

-- AddForeignKey
ALTER TABLE "bot_inbox" ADD CONSTRAINT "bot_inbox_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "bot_schedule_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

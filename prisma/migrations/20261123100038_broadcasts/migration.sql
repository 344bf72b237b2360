-- AlterTable
ALTER TABLE "contacts" ADD COLUMN     "opt_in_import_id" TEXT,
ADD COLUMN     "opted_in_at" TIMESTAMPTZ(3),
ADD COLUMN     "opted_out_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "segments" (
    "id" UUID NOT NULL,
    "project_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "filter" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "segments_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "broadcasts" (
    "id" UUID NOT NULL,
    "project_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "template_name" TEXT NOT NULL,
    "template_language" TEXT NOT NULL,
    "category" TEXT NOT NULL,
    "audience" JSONB NOT NULL,
    "template_variables" JSONB NOT NULL,
    "status" TEXT NOT NULL,
    "status_reason" TEXT,
    "scheduled_at" TIMESTAMPTZ(3),
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "approved_at" TIMESTAMPTZ(3),
    "approved_by" TEXT,
    "created_by" TEXT NOT NULL,
    "creator_name" TEXT,
    "creator_email" TEXT,
    "wave_size" INTEGER,
    "wave_interval_s" INTEGER,
    "wave_scheduled_at" TIMESTAMPTZ(3),
    "wave_scheduled_count" INTEGER,
    "auto_retarget_quality" BOOLEAN NOT NULL DEFAULT false,
    "retarget_parent_id" UUID,
    "retarget_count" INTEGER NOT NULL DEFAULT 0,
    "retarget_due_at" TIMESTAMPTZ(3),
    "preflight" JSONB,
    "lease_owner" TEXT,
    "lease_until" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "broadcasts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "broadcast_recipients" (
    "id" BIGSERIAL NOT NULL,
    "broadcast_id" UUID NOT NULL,
    "contact_id" BIGINT,
    "phone" TEXT NOT NULL,
    "variables" JSONB NOT NULL,
    "state" TEXT NOT NULL,
    "wave" INTEGER NOT NULL DEFAULT 1,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "not_before" TIMESTAMPTZ(3),
    "lease_owner" TEXT,
    "lease_until" TIMESTAMPTZ(3),
    "message_ref" TEXT,
    "wamid" TEXT,
    "error_code" INTEGER,
    "error_category" TEXT,
    "error_title" TEXT,
    "sent_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "broadcast_recipients_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "broadcast_pacing" (
    "phone_number_id" TEXT NOT NULL,
    "throughput" INTEGER NOT NULL DEFAULT 80,
    "current_rate" DOUBLE PRECISION NOT NULL,
    "next_slot_at" TIMESTAMPTZ(3) NOT NULL,
    "throttled_at" TIMESTAMPTZ(3),

    CONSTRAINT "broadcast_pacing_pkey" PRIMARY KEY ("phone_number_id")
);

-- CreateTable
CREATE TABLE "contact_imports" (
    "id" UUID NOT NULL,
    "project_id" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "default_country" TEXT,
    "filename" TEXT,
    "bytes_total" BIGINT NOT NULL DEFAULT 0,
    "bytes_read" BIGINT NOT NULL DEFAULT 0,
    "rows_total" INTEGER NOT NULL DEFAULT 0,
    "created" INTEGER NOT NULL DEFAULT 0,
    "updated" INTEGER NOT NULL DEFAULT 0,
    "unchanged" INTEGER NOT NULL DEFAULT 0,
    "merged" INTEGER NOT NULL DEFAULT 0,
    "rejected" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,
    "ignored_columns" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "heartbeat_at" TIMESTAMPTZ(3),

    CONSTRAINT "contact_imports_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "contact_import_rows" (
    "import_id" UUID NOT NULL,
    "line" INTEGER NOT NULL,
    "outcome" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "number" TEXT,

    CONSTRAINT "contact_import_rows_pkey" PRIMARY KEY ("import_id","line")
);

-- CreateTable
CREATE TABLE "contact_import_phones" (
    "import_id" UUID NOT NULL,
    "phone" TEXT NOT NULL,
    "first_line" INTEGER NOT NULL,

    CONSTRAINT "contact_import_phones_pkey" PRIMARY KEY ("import_id","phone")
);

-- CreateIndex
CREATE INDEX "segments_project_id_created_at_idx" ON "segments"("project_id", "created_at");

-- CreateIndex
CREATE INDEX "broadcasts_project_id_created_at_idx" ON "broadcasts"("project_id", "created_at");

-- CreateIndex
CREATE INDEX "broadcasts_status_idx" ON "broadcasts"("status");

-- CreateIndex
CREATE UNIQUE INDEX "broadcasts_retarget_parent_id_key" ON "broadcasts"("retarget_parent_id");

-- CreateIndex
CREATE INDEX "broadcast_recipients_broadcast_id_state_id_idx" ON "broadcast_recipients"("broadcast_id", "state", "id");

-- CreateIndex
CREATE INDEX "broadcast_recipients_message_ref_idx" ON "broadcast_recipients"("message_ref");

-- CreateIndex
CREATE UNIQUE INDEX "broadcast_recipients_broadcast_id_phone_key" ON "broadcast_recipients"("broadcast_id", "phone");

-- CreateIndex
CREATE INDEX "contact_imports_project_id_created_at_idx" ON "contact_imports"("project_id", "created_at");

-- AddForeignKey
ALTER TABLE "segments" ADD CONSTRAINT "segments_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "broadcasts" ADD CONSTRAINT "broadcasts_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "broadcast_recipients" ADD CONSTRAINT "broadcast_recipients_broadcast_id_fkey" FOREIGN KEY ("broadcast_id") REFERENCES "broadcasts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "contact_imports" ADD CONSTRAINT "contact_imports_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "contact_import_rows" ADD CONSTRAINT "contact_import_rows_import_id_fkey" FOREIGN KEY ("import_id") REFERENCES "contact_imports"("id") ON DELETE CASCADE ON UPDATE CASCADE;

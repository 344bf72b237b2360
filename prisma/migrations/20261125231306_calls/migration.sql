-- AlterTable
ALTER TABLE "contacts" ADD COLUMN     "call_permission_expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "call_permission_status" TEXT;

-- CreateTable
CREATE TABLE "calls" (
    "id" BIGSERIAL NOT NULL,
    "project_id" TEXT NOT NULL,
    "conversation_id" BIGINT NOT NULL,
    "call_id" TEXT NOT NULL,
    "direction" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "offer_sdp" TEXT,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "answered_at" TIMESTAMPTZ(3),
    "ended_at" TIMESTAMPTZ(3),
    "duration_seconds" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "calls_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "calls_project_id_id_idx" ON "calls"("project_id", "id" DESC);

-- CreateIndex
CREATE INDEX "calls_conversation_id_id_idx" ON "calls"("conversation_id", "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "calls_project_id_call_id_key" ON "calls"("project_id", "call_id");

-- AddForeignKey
ALTER TABLE "calls" ADD CONSTRAINT "calls_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "calls" ADD CONSTRAINT "calls_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AlterTable
ALTER TABLE "messages" ADD COLUMN     "client_ref" TEXT;

-- AlterTable
ALTER TABLE "idempotency_records" ADD COLUMN     "headers" JSONB,
ADD COLUMN     "message_ref" TEXT;

-- CreateIndex
CREATE UNIQUE INDEX "messages_project_id_client_ref_key" ON "messages"("project_id", "client_ref");

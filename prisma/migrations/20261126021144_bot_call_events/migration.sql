-- AlterTable
ALTER TABLE "bot_inbox" ADD COLUMN     "call_id" BIGINT,
ADD COLUMN     "payload" JSONB;

-- CreateIndex
CREATE INDEX "bot_inbox_call_id_idx" ON "bot_inbox"("call_id");

-- AddForeignKey
ALTER TABLE "bot_inbox" ADD CONSTRAINT "bot_inbox_call_id_fkey" FOREIGN KEY ("call_id") REFERENCES "calls"("id") ON DELETE CASCADE ON UPDATE CASCADE;

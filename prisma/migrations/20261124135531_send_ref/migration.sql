-- One name for one value: our send reference (`snd_…`, sent as biz_opaque_callback_data) was
-- `messages.client_ref` and `message_ref` elsewhere. Renamed in place (metadata only: no rewrite,
-- no data lost); the indexes follow the columns and take Prisma's default names. The partial index
-- messages_unnamed_sends_sent_at_idx (WHERE wamid = send_ref) follows the column by itself.
ALTER TABLE "messages" RENAME COLUMN "client_ref" TO "send_ref";
ALTER TABLE "idempotency_records" RENAME COLUMN "message_ref" TO "send_ref";
ALTER TABLE "broadcast_recipients" RENAME COLUMN "message_ref" TO "send_ref";
ALTER INDEX "messages_project_id_client_ref_key" RENAME TO "messages_project_id_send_ref_key";
ALTER INDEX "broadcast_recipients_message_ref_idx" RENAME TO "broadcast_recipients_send_ref_idx";

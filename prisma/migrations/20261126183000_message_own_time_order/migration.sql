-- A conversation's messages are listed by their own time (issue 68, item 6): a history sync's past
-- message arrives after newer ones and was listed as the newest. Keyset pages over (sent_at, id).
CREATE INDEX "messages_conversation_id_sent_at_id_idx" ON "messages"("conversation_id", "sent_at" DESC, "id" DESC);

-- A colleague @mentioned in a note is told in the inbox (issue 68, item 2): one row per note and
-- mentioned person, seen when that person opens the conversation.
CREATE TABLE "note_mentions" (
    "id" BIGSERIAL NOT NULL,
    "project_id" TEXT NOT NULL,
    "conversation_id" BIGINT NOT NULL,
    "note_id" BIGINT NOT NULL,
    "account_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "seen_at" TIMESTAMPTZ(3),

    CONSTRAINT "note_mentions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "note_mentions_account_id_project_id_seen_at_idx" ON "note_mentions"("account_id", "project_id", "seen_at");

-- CreateIndex
CREATE UNIQUE INDEX "note_mentions_note_id_account_id_key" ON "note_mentions"("note_id", "account_id");

-- AddForeignKey
ALTER TABLE "note_mentions" ADD CONSTRAINT "note_mentions_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "note_mentions" ADD CONSTRAINT "note_mentions_note_id_fkey" FOREIGN KEY ("note_id") REFERENCES "conversation_notes"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "note_mentions" ADD CONSTRAINT "note_mentions_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "dashboard_accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

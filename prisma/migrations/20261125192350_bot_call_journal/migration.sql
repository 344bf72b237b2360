-- CreateTable
CREATE TABLE "bot_call_journal" (
    "event_key" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "project_id" TEXT NOT NULL,
    "op" TEXT NOT NULL,
    "args_hash" TEXT NOT NULL,
    "answer" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "bot_call_journal_pkey" PRIMARY KEY ("event_key","seq")
);

-- AddForeignKey
ALTER TABLE "bot_call_journal" ADD CONSTRAINT "bot_call_journal_event_key_fkey" FOREIGN KEY ("event_key") REFERENCES "bot_inbox"("key") ON DELETE CASCADE ON UPDATE CASCADE;

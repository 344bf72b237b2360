-- The bot's inbox (lib/bot/inbox.ts): inbound messages the deployed bot has still to handle, so a
-- restart or a database blink no longer drops them.

-- CreateTable
CREATE TABLE "bot_inbox" (
    "message_id" BIGINT NOT NULL,
    "project_id" TEXT NOT NULL,
    "lease_until" TIMESTAMPTZ(3) NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "bot_inbox_pkey" PRIMARY KEY ("message_id")
);

-- CreateIndex
CREATE INDEX "bot_inbox_lease_until_idx" ON "bot_inbox"("lease_until");

-- AddForeignKey
ALTER TABLE "bot_inbox" ADD CONSTRAINT "bot_inbox_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE CASCADE;

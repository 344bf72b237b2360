-- AlterTable
ALTER TABLE "messages" ADD COLUMN     "pricing" JSONB;

-- CreateTable
CREATE TABLE "rate_cards" (
    "id" TEXT NOT NULL,
    "currency" TEXT NOT NULL,
    "prices" JSONB NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "rate_cards_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "channel_messaging_limits" (
    "phone_number_id" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "tier" TEXT,
    "user_limit" INTEGER,
    "error" TEXT,
    "read_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "channel_messaging_limits_pkey" PRIMARY KEY ("phone_number_id")
);

-- CreateIndex
CREATE INDEX "messages_project_id_sent_at_idx" ON "messages"("project_id", "sent_at");

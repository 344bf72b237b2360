-- AlterTable
ALTER TABLE "broadcast_recipients" ADD COLUMN     "limit_held_until" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "portfolio_reach" (
    "waba_id" TEXT NOT NULL,
    "user_key" TEXT NOT NULL,
    "reached_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "portfolio_reach_pkey" PRIMARY KEY ("waba_id","user_key")
);

-- CreateIndex
CREATE INDEX "portfolio_reach_waba_id_reached_at_idx" ON "portfolio_reach"("waba_id", "reached_at");

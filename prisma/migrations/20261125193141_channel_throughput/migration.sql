-- AlterTable
ALTER TABLE "broadcast_pacing" ADD COLUMN     "operator_throughput" INTEGER;

-- CreateTable
CREATE TABLE "channel_throughput" (
    "phone_number_id" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "level" TEXT,
    "coexistence" BOOLEAN NOT NULL DEFAULT false,
    "messages_per_second" INTEGER,
    "error" TEXT,
    "read_at" TIMESTAMPTZ(3) NOT NULL,
    "changed_at" TIMESTAMPTZ(3),

    CONSTRAINT "channel_throughput_pkey" PRIMARY KEY ("phone_number_id")
);

-- Until now `throughput` was the operator's setting or the default (80) written at the first send:
-- a value other than 80 can only have been the operator's, kept as the cap it now is.
UPDATE "broadcast_pacing" SET "operator_throughput" = "throughput" WHERE "throughput" <> 80;

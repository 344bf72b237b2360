-- AlterTable
ALTER TABLE "broadcast_recipients" ADD COLUMN     "user_id" TEXT,
ALTER COLUMN "phone" DROP NOT NULL;

-- CreateIndex
CREATE UNIQUE INDEX "broadcast_recipients_broadcast_id_user_id_key" ON "broadcast_recipients"("broadcast_id", "user_id");

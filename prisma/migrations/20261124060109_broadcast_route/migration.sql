-- AlterTable
ALTER TABLE "broadcasts" ADD COLUMN     "route" TEXT NOT NULL DEFAULT 'cloud_api',
ADD COLUMN     "ttl_seconds" INTEGER;

-- AlterTable
ALTER TABLE "broadcast_recipients" ADD COLUMN     "error_reason" TEXT;

-- AlterTable
ALTER TABLE "oauth_refresh_tokens" ADD COLUMN     "successor_sealed" TEXT;

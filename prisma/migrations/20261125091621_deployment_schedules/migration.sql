-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "schedules" JSONB;

-- AlterTable
ALTER TABLE "projects" ADD COLUMN     "conversation_reserve" INTEGER NOT NULL DEFAULT 0;

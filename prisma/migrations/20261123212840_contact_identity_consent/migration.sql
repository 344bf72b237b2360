-- AlterTable
ALTER TABLE "projects" ADD COLUMN     "consent_keywords" JSONB;

-- AlterTable
ALTER TABLE "contacts" ADD COLUMN     "consent_at" TIMESTAMPTZ(3),
ADD COLUMN     "consent_source" TEXT,
ADD COLUMN     "parent_user_id" TEXT,
ADD COLUMN     "user_id" TEXT,
ADD COLUMN     "username" TEXT,
ALTER COLUMN "phone" DROP NOT NULL;

-- CreateIndex
CREATE UNIQUE INDEX "contacts_project_id_user_id_key" ON "contacts"("project_id", "user_id");

-- A contact is one WhatsApp user: known by its phone, its BSUID, or both.
ALTER TABLE "contacts" ADD CONSTRAINT "contacts_phone_or_user_id" CHECK ("phone" IS NOT NULL OR "user_id" IS NOT NULL);

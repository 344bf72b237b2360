-- AlterTable
ALTER TABLE "contacts" ADD COLUMN     "kind" TEXT NOT NULL DEFAULT 'customer';

-- CreateTable
CREATE TABLE "groups" (
    "id" BIGSERIAL NOT NULL,
    "project_id" TEXT NOT NULL,
    "group_id" TEXT,
    "request_id" TEXT,
    "status" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "description" TEXT,
    "join_approval_mode" TEXT NOT NULL,
    "invite_link" TEXT,
    "contact_id" BIGINT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "groups_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "group_participants" (
    "group_row_id" BIGINT NOT NULL,
    "project_id" TEXT NOT NULL,
    "wa_id" TEXT NOT NULL,
    "joined_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "group_participants_pkey" PRIMARY KEY ("group_row_id","wa_id")
);

-- CreateIndex
CREATE INDEX "groups_project_id_id_idx" ON "groups"("project_id", "id" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "groups_project_id_group_id_key" ON "groups"("project_id", "group_id");

-- CreateIndex
CREATE UNIQUE INDEX "groups_project_id_request_id_key" ON "groups"("project_id", "request_id");

-- CreateIndex
CREATE UNIQUE INDEX "groups_contact_id_key" ON "groups"("contact_id");

-- AddForeignKey
ALTER TABLE "groups" ADD CONSTRAINT "groups_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "group_participants" ADD CONSTRAINT "group_participants_group_row_id_fkey" FOREIGN KEY ("group_row_id") REFERENCES "groups"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A group's own contact record (kind group) has neither phone nor user id (docs/groups.md).
ALTER TABLE "contacts" DROP CONSTRAINT "contacts_phone_or_user_id";
ALTER TABLE "contacts" ADD CONSTRAINT "contacts_phone_or_user_id" CHECK ("phone" IS NOT NULL OR "user_id" IS NOT NULL OR "kind" = 'group');

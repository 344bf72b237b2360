-- CreateTable
CREATE TABLE "inbox_settings" (
    "project_id" TEXT NOT NULL,
    "auto_assign" BOOLEAN NOT NULL DEFAULT false,
    "assign_cap" INTEGER NOT NULL DEFAULT 10,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "inbox_settings_pkey" PRIMARY KEY ("project_id")
);

-- CreateTable
CREATE TABLE "inbox_members" (
    "project_id" TEXT NOT NULL,
    "account_id" TEXT NOT NULL,
    "available" BOOLEAN NOT NULL DEFAULT false,
    "last_assigned_at" TIMESTAMPTZ(3),

    CONSTRAINT "inbox_members_pkey" PRIMARY KEY ("project_id","account_id")
);

-- AddForeignKey
ALTER TABLE "inbox_settings" ADD CONSTRAINT "inbox_settings_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "inbox_members" ADD CONSTRAINT "inbox_members_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "inbox_members" ADD CONSTRAINT "inbox_members_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "dashboard_accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- CreateTable
CREATE TABLE "dashboard_invites" (
    "id" TEXT NOT NULL,
    "project_id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "invited_by" TEXT,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "dashboard_invites_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "dashboard_invites_token_hash_key" ON "dashboard_invites"("token_hash");

-- CreateIndex
CREATE UNIQUE INDEX "dashboard_invites_project_id_email_key" ON "dashboard_invites"("project_id", "email");

-- AddForeignKey
ALTER TABLE "dashboard_invites" ADD CONSTRAINT "dashboard_invites_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

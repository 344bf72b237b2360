-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "last_used_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "dashboard_accounts" (
    "id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "password_hash" TEXT,
    "setup_token_hash" TEXT,
    "setup_expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "dashboard_accounts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "dashboard_memberships" (
    "account_id" TEXT NOT NULL,
    "project_id" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "dashboard_memberships_pkey" PRIMARY KEY ("account_id","project_id")
);

-- CreateTable
CREATE TABLE "dashboard_sessions" (
    "id" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "account_id" TEXT NOT NULL,
    "csrf_token" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "dashboard_sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "dashboard_audit" (
    "id" BIGSERIAL NOT NULL,
    "project_id" TEXT NOT NULL,
    "account_id" TEXT,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "before" JSONB,
    "after" JSONB,
    "at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "dashboard_audit_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "dashboard_accounts_email_key" ON "dashboard_accounts"("email");

-- CreateIndex
CREATE UNIQUE INDEX "dashboard_accounts_setup_token_hash_key" ON "dashboard_accounts"("setup_token_hash");

-- CreateIndex
CREATE INDEX "dashboard_memberships_project_id_idx" ON "dashboard_memberships"("project_id");

-- CreateIndex
CREATE UNIQUE INDEX "dashboard_sessions_token_hash_key" ON "dashboard_sessions"("token_hash");

-- CreateIndex
CREATE INDEX "dashboard_sessions_account_id_idx" ON "dashboard_sessions"("account_id");

-- CreateIndex
CREATE INDEX "dashboard_audit_project_id_id_idx" ON "dashboard_audit"("project_id", "id" DESC);

-- AddForeignKey
ALTER TABLE "dashboard_memberships" ADD CONSTRAINT "dashboard_memberships_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "dashboard_accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "dashboard_memberships" ADD CONSTRAINT "dashboard_memberships_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "dashboard_sessions" ADD CONSTRAINT "dashboard_sessions_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "dashboard_accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

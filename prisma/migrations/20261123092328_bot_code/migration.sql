-- CreateTable
CREATE TABLE "code_files" (
    "project_id" TEXT NOT NULL,
    "tree" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "version" INTEGER NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "code_files_pkey" PRIMARY KEY ("project_id","tree","path")
);

-- CreateTable
CREATE TABLE "deployments" (
    "id" TEXT NOT NULL,
    "project_id" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "content_hash" TEXT NOT NULL,
    "bundle" TEXT,
    "source_map" TEXT,
    "files" JSONB,
    "diagnostics" JSONB NOT NULL DEFAULT '[]',
    "message" TEXT,
    "created_by" TEXT,
    "rollback_of" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "seq" BIGSERIAL NOT NULL,

    CONSTRAINT "deployments_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "bot_releases" (
    "project_id" TEXT NOT NULL,
    "deployment_id" TEXT NOT NULL,
    "content_hash" TEXT NOT NULL,
    "promoted_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "bot_releases_pkey" PRIMARY KEY ("project_id")
);

-- CreateTable
CREATE TABLE "bot_logs" (
    "id" BIGSERIAL NOT NULL,
    "project_id" TEXT NOT NULL,
    "level" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "deployment_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "bot_logs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "deployments_project_id_seq_idx" ON "deployments"("project_id", "seq" DESC);

-- CreateIndex
CREATE INDEX "bot_logs_project_id_id_idx" ON "bot_logs"("project_id", "id" DESC);

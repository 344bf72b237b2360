-- CreateTable
CREATE TABLE "flows" (
    "id" TEXT NOT NULL,
    "project_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "categories" TEXT[],
    "status" TEXT NOT NULL DEFAULT 'DRAFT',
    "current_version" INTEGER NOT NULL,
    "channel_flow_id" TEXT,
    "channel_draft_id" TEXT,
    "channel_draft_version" INTEGER,
    "published_version" INTEGER,
    "published_at" TIMESTAMPTZ(3),
    "channel_findings" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "flows_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "flow_versions" (
    "flow_id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "definition" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "findings" JSONB NOT NULL,
    "source" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "flow_versions_pkey" PRIMARY KEY ("flow_id","version")
);

-- CreateIndex
CREATE INDEX "flows_channel_flow_id_idx" ON "flows"("channel_flow_id");

-- CreateIndex
CREATE UNIQUE INDEX "flows_project_id_name_key" ON "flows"("project_id", "name");

-- AddForeignKey
ALTER TABLE "flows" ADD CONSTRAINT "flows_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "flow_versions" ADD CONSTRAINT "flow_versions_flow_id_fkey" FOREIGN KEY ("flow_id") REFERENCES "flows"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- CreateTable
CREATE TABLE "project_table_quotas" (
    "project_id" TEXT NOT NULL,
    "schema" TEXT NOT NULL,
    "max_rows" BIGINT,
    "max_bytes" BIGINT,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "project_table_quotas_pkey" PRIMARY KEY ("project_id","schema")
);

-- AlterTable
ALTER TABLE "webhook_attempts" ADD COLUMN     "response_excerpt" TEXT;

-- CreateTable
CREATE TABLE "project_api_errors" (
    "project_id" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "operation" TEXT NOT NULL,
    "status" INTEGER NOT NULL,
    "code" TEXT NOT NULL,
    "count" INTEGER NOT NULL DEFAULT 0,
    "last_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "project_api_errors_pkey" PRIMARY KEY ("project_id","day","operation","status","code")
);

-- CreateIndex
CREATE INDEX "project_api_errors_project_id_last_at_idx" ON "project_api_errors"("project_id", "last_at" DESC);

-- AddForeignKey
ALTER TABLE "project_api_errors" ADD CONSTRAINT "project_api_errors_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE CASCADE;

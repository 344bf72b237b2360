-- CreateTable
CREATE TABLE "bot_secrets" (
    "project_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "value_enc" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "production_only" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "bot_secrets_pkey" PRIMARY KEY ("project_id","name")
);

-- CreateTable
CREATE TABLE "bot_http_allowlists" (
    "project_id" TEXT NOT NULL,
    "hosts" TEXT[],
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "bot_http_allowlists_pkey" PRIMARY KEY ("project_id")
);

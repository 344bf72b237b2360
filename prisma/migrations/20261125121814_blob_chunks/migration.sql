-- CreateTable
CREATE TABLE "blob_chunks" (
    "key" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "blob_chunks_pkey" PRIMARY KEY ("key","seq")
);

-- The conversation list's order leaves `conversations` for a narrow table of its own (issue #18).
-- With the order index on `conversations`, every message that moved its conversation up the list
-- (one in five in the soak: each exchange with a customer starts with one) was an update that
-- could not be HOT and added an entry to each of the table's indexes. Now `conversations` carries
-- no index on a column a message changes, so its per-message update is always HOT, and a reorder
-- writes one narrow row here (its primary key and the order index).

-- DropIndex
DROP INDEX "conversations_project_id_order_at_id_idx";

-- CreateTable
CREATE TABLE "conversation_order" (
    "conversation_id" BIGINT NOT NULL,
    "project_id" TEXT NOT NULL,
    "order_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "conversation_order_pkey" PRIMARY KEY ("conversation_id")
);

-- CreateIndex
CREATE INDEX "conversation_order_project_id_order_at_conversation_id_idx" ON "conversation_order"("project_id", "order_at" DESC, "conversation_id" DESC);

-- AddForeignKey
ALTER TABLE "conversation_order" ADD CONSTRAINT "conversation_order_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Existing conversations keep their place.
INSERT INTO "conversation_order" ("conversation_id", "project_id", "order_at")
  SELECT "id", "project_id", "order_at" FROM "conversations";

-- Kept equal to conversations.order_at in the same transaction, whoever writes a conversation
-- (the send path, inbound messages, broadcasts, fixtures): the writers need not know of this table.
CREATE FUNCTION conversation_order_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO "conversation_order" ("conversation_id", "project_id", "order_at") VALUES (NEW.id, NEW.project_id, NEW.order_at);
  ELSE
    UPDATE "conversation_order" SET "order_at" = NEW.order_at WHERE "conversation_id" = NEW.id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER conversation_order_on_insert AFTER INSERT ON "conversations"
  FOR EACH ROW EXECUTE FUNCTION conversation_order_sync();
-- Only a reorder reaches the function (the WHEN clause is checked without calling it).
CREATE TRIGGER conversation_order_on_update AFTER UPDATE OF "order_at" ON "conversations"
  FOR EACH ROW WHEN (NEW.order_at IS DISTINCT FROM OLD.order_at) EXECUTE FUNCTION conversation_order_sync();

-- One narrow row per conversation, rewritten on each reorder: free room on each page, and vacuum
-- after a fixed number of dead rows rather than a share of a small table.
ALTER TABLE "conversation_order" SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.0,
  autovacuum_vacuum_threshold = 1000, autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_cost_limit = 2000);

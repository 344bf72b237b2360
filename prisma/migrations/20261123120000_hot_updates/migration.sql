-- Hot-path updates that PostgreSQL can make HOT (heap-only: no new index entries, pruned on the
-- page without VACUUM), and vacuum that keeps up with the rest (issue #18).

-- Conversations: the recent-activity order moves to its own column, `order_at`, which a send or an
-- inbound message moves only when it changes the order (another conversation of the project is
-- ahead). `last_message_at` stays exact but leaves the index, so moving it is a HOT update.
ALTER TABLE "conversations" ADD COLUMN "order_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;
UPDATE "conversations" SET "order_at" = "last_message_at";
DROP INDEX "conversations_project_id_last_message_at_id_idx";
CREATE INDEX "conversations_project_id_order_at_id_idx" ON "conversations"("project_id", "order_at" DESC, "id" DESC);

-- A new conversation enters the order at its first message, whoever inserts it (fixtures and
-- writers that only know last_message_at included).
CREATE FUNCTION conversations_order_at_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.order_at := NEW.last_message_at;
  RETURN NEW;
END $$;
CREATE TRIGGER conversations_order_at_on_insert BEFORE INSERT ON "conversations"
  FOR EACH ROW EXECUTE FUNCTION conversations_order_at_on_insert();

-- Free room on every page so that an update finds space for the new version beside the old one
-- (a HOT update needs it on the same page). Conversations are few and updated per message: 70%.
-- Messages are inserted once and updated two or three times soon after (sent, delivered, read):
-- 85% leaves room for those without making the table much larger. The send counter is one row
-- per project and day, updated per send.
ALTER TABLE "conversations" SET (fillfactor = 70);
ALTER TABLE "messages" SET (fillfactor = 85);
ALTER TABLE "send_counters" SET (fillfactor = 50);

-- Vacuum: the defaults wait for 20% of a table to be dead (50 rows + 20%), which on a few hot rows
-- means thousands of dead versions of each before a pass, and on a large messages table a pass
-- that comes rarely and takes long. Small fixed thresholds for the small hot tables; a smaller
-- share for messages and the outbox, and insert-driven passes that keep the visibility map (and
-- index-only scans) current. The cost limit is raised so a pass finishes before the next is due.
ALTER TABLE "conversations" SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_cost_limit = 2000);
ALTER TABLE "contacts" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500);
ALTER TABLE "send_counters" SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000);
ALTER TABLE "messages" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_limit = 2000);
ALTER TABLE "events" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_cost_limit = 2000);

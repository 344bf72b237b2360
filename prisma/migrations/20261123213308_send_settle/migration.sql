-- The send ledger's unknown-outcome rule (issue #34): a send whose answer was lost stays `pending`
-- until a status settles it, or until the settle bound passes and it becomes `unknown`. The settle
-- job finds such sends by this partial index: a send keeps its reference as its wamid
-- (`wamid = client_ref`) until the channel names it, so the index holds only sends whose wamid is
-- not known (pending ones, and the few `unknown`), and its predicate reads no column a status
-- update changes (`status` would cost every delivered/read update its HOT update). Not in
-- schema.prisma: Prisma's schema has no partial indexes.
CREATE INDEX "messages_unnamed_sends_sent_at_idx" ON "messages" ("sent_at") WHERE "wamid" = "client_ref";

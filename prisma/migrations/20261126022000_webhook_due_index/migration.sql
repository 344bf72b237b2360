-- The index of due deliveries (issue 62, item 3): a registration's pending deliveries by due time.
-- The delivery engine claims many due deliveries per statement through it (lib/webhooks/store.ts
-- claimDue: for each registration with room, its oldest due rows, `FOR UPDATE SKIP LOCKED`), and the
-- sweep finds the registrations with overdue work with one probe each (lanesWithDue). Partial: only
-- pending rows, so finished deliveries (the operators' log) cost it nothing. Not in schema.prisma:
-- Prisma's schema has no partial indexes.
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" ("webhook_id", "next_attempt_at") WHERE "status" = 'pending';

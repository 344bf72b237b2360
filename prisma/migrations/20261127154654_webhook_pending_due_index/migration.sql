-- Pending deliveries by due time (issue 69, P3), in place of the index on (status, next_attempt_at).
-- The overdue sweep (lib/webhooks/store.ts overdueDeliveries, interruptedLastAttempts) reads only pending rows,
-- so a partial index serves it; a delivery's outcome (pending to succeeded/failed) then adds no entry,
-- where the two-column index took one for every finished delivery and kept the operators' log in it.
-- Not in schema.prisma: Prisma's schema has no partial indexes.
CREATE INDEX "webhook_deliveries_pending_due_idx" ON "webhook_deliveries" ("next_attempt_at") WHERE "status" = 'pending';

-- DropIndex
DROP INDEX "webhook_deliveries_status_next_attempt_at_idx";

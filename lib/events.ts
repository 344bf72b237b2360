/**
 * The event outbox. Platform events (`message.received`, `message.status`, `template.approved`,
 * `template.rejected`) and custom events are rows written in the same transaction as the change
 * that caused them, so a crash never loses one; the webhook dispatcher delivers from this table.
 */
import type { Prisma } from '../generated/prisma/client.js';
import { newId } from './secrets.js';

export const PLATFORM_EVENTS = ['message.received', 'message.status', 'template.approved', 'template.rejected'] as const;
export type PlatformEvent = (typeof PLATFORM_EVENTS)[number];

/** Channel of the PostgreSQL notification raised with each event, so the dispatcher wakes at once. */
export const EVENTS_CHANNEL = 'service_events';

/** A Prisma client or transaction client. */
type Tx = Pick<Prisma.TransactionClient, 'event' | '$executeRaw'>;

/**
 * Writes an event. The notification is transactional too: PostgreSQL delivers it when the
 * caller's transaction commits, and never when it rolls back.
 */
export async function recordEvent(tx: Tx, projectId: string, name: string, data: unknown, at: Date): Promise<string> {
  const id = newId('evt', 20);
  await tx.event.create({ data: { id, projectId, name, data: (data ?? null) as Prisma.InputJsonValue, createdAt: at } });
  await tx.$executeRaw`SELECT pg_notify(${EVENTS_CHANNEL}, ${projectId})`;
  return id;
}

/**
 * Writes an event on its own (not part of a larger change, e.g. a custom event from the bot):
 * one statement, one commit, the notification included.
 */
export async function insertEvent(
  db: { query(text: string, values: unknown[]): Promise<unknown> },
  projectId: string,
  name: string,
  data: unknown,
  at: Date,
): Promise<string> {
  const id = newId('evt', 20);
  await db.query(
    `WITH e AS (INSERT INTO events (id, project_id, name, data, created_at) VALUES ($1, $2, $3, $4::jsonb, $5) RETURNING project_id)
     SELECT pg_notify($6, project_id) FROM e`,
    [id, projectId, name, JSON.stringify(data ?? null), at, EVENTS_CHANNEL],
  );
  return id;
}

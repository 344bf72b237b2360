/**
 * The event outbox. Platform events (`message.received`, `message.status`, `template.approved`,
 * `template.rejected`) and custom events are rows written in the same transaction as the change
 * that caused them, so a crash never loses one; the webhook dispatcher delivers from this table.
 * This module is the only writer of `events` (inserted, marked dispatched by the fan-out, pruned).
 */
import { newId } from '../platform/secrets.js';
import { type Tx, execute, executeNamed, queryRowsNamed } from '../platform/db/tx.js';
import { CLAIM_ROWS } from '../platform/db/claims.js';

export const PLATFORM_EVENTS = [
  'message.received', 'message.status', 'template.approved', 'template.rejected',
  // The team's changes of a conversation (lib/conversations/team.ts, notes.ts).
  'conversation.assigned', 'conversation.labels_changed', 'conversation.note_added',
  // Voice calls (lib/calls/calls.ts).
  'call.ringing', 'call.answered', 'call.ended',
  // WhatsApp groups (lib/groups/groups.ts).
  'group.created', 'group.deleted', 'group.participants_changed', 'group.settings_changed', 'group.status_changed',
  // The Business app beside the API, and thread control (lib/messaging/coexistence.ts).
  'message.echo', 'conversation.thread_control',
] as const;
export type PlatformEvent = (typeof PLATFORM_EVENTS)[number];

/** Channel of the PostgreSQL notification raised with each event, so the dispatcher wakes at once. */
export const EVENTS_CHANNEL = 'service_events';


/**
 * `dispatched_at` of a new event, as SQL over the statement's project id, event name and time:
 * NULL (waiting for the fan-out) when an active registration of the project subscribes to the
 * name, else the event's time. An event nobody listens to then costs no fan-out and no wake-up;
 * a registration made after the event does not receive it, as with any fan-out.
 */
export function dispatchedAtSql(projectId: string, name: string, at: string): string {
  return `CASE WHEN EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = ${projectId} AND w.is_active AND ${name} = ANY (w.events))
            THEN NULL ELSE ${at} END`;
}

/**
 * The outbox insert, the one place events are written: `select` yields (id, project_id, name,
 * data, created_at, dispatched_at), dispatched_at from dispatchedAtSql. Batched writers (the
 * statuses of a notification) use it with a SELECT of their own rows.
 */
export function insertEventsSql(select: string): string {
  return `INSERT INTO events (id, project_id, name, data, created_at, dispatched_at) ${select}`;
}

/** One statement: the event, and the dispatcher's wake-up when it waits for a fan-out. */
const INSERT_EVENT = `
  WITH e AS (
    ${insertEventsSql(`SELECT $1, $2, $3, $4::jsonb, $5::timestamptz, ${dispatchedAtSql('$2', '$3', '$5::timestamptz')}`)}
    RETURNING project_id, dispatched_at
  )
  SELECT pg_notify($6, project_id) FROM e WHERE dispatched_at IS NULL`;

/**
 * Writes an event within the caller's transaction (or on its own on `deps.db.sql`: one statement,
 * one commit). The wake-up is transactional too: PostgreSQL delivers it when the transaction
 * commits, and never when it rolls back.
 */
export async function recordEvent(tx: Tx, projectId: string, name: string, data: unknown, at: Date): Promise<string> {
  const id = newId('evt', 20);
  // Every event is this statement (a send's status, a message, a custom event): prepared once per connection.
  await executeNamed(tx, 'insert-event', INSERT_EVENT, id, projectId, name, JSON.stringify(data ?? null), at, EVENTS_CHANNEL);
  return id;
}

/** An undispatched event paired with one registration subscribed to it (`event_id` null when the batch has no pairs). */
export interface FanOutPair {
  events: number;
  event_id: string | null;
  project_id: string;
  name: string;
  data_json: string;
  created_at: Date;
  webhook_id: string;
  url: string;
  secret_enc: string;
}

/**
 * Locks up to `limit` events not yet fanned out (oldest first, skipping those another instance
 * holds), marks them dispatched at `now`, and pairs each with the active registrations subscribed
 * to its name. Run inside the fan-out's transaction, which writes the deliveries.
 */
export async function takeEventsForFanOut(tx: Tx, limit: number, now: Date): Promise<FanOutPair[]> {
  return queryRowsNamed<FanOutPair>(
    tx,
    'webhook-take-events',
    `WITH ev AS (
       SELECT id, project_id, name, data, created_at FROM events
        WHERE dispatched_at IS NULL ORDER BY created_at, id LIMIT $1 ${CLAIM_ROWS}
     ), upd AS (
       UPDATE events e SET dispatched_at = $2 FROM ev WHERE e.id = ev.id RETURNING e.id
     )
     SELECT (SELECT count(*) FROM upd)::int AS events, p.*
       FROM (SELECT 1) AS one
       LEFT JOIN (
         SELECT ev.id AS event_id, ev.project_id, ev.name, COALESCE(ev.data::text, 'null') AS data_json, ev.created_at,
                w.id AS webhook_id, w.url, w.secret_enc
           FROM ev JOIN webhook_endpoints w ON w.project_id = ev.project_id AND w.is_active AND ev.name = ANY(w.events)
       ) p ON true`,
    limit, now,
  );
}

/**
 * Deletes up to `limit` events fanned out before `before`, oldest first, except those a pending
 * delivery still needs (its retries read the event's data). Uses the (dispatched_at, created_at) index.
 */
export async function pruneEvents(db: Tx, before: Date, limit: number): Promise<number> {
  return execute(
    db,
    `DELETE FROM events WHERE id IN (
       SELECT e.id FROM events e
        WHERE e.dispatched_at < $1
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'pending')
        ORDER BY e.dispatched_at LIMIT $2)`,
    before, limit,
  );
}

/**
 * Fan-out: each event of the outbox not yet dispatched becomes one delivery per active
 * registration of its project subscribed to exactly that name, each with its own id (the id the
 * receiver sees; retries reuse it). The deliveries are written in the transaction that marks the
 * events dispatched, so an event is fanned out exactly once even with several instances
 * (`FOR UPDATE SKIP LOCKED`) or a crash halfway. Registrations made or re-enabled after the event
 * do not receive it.
 */
import type pg from 'pg';
import { newId } from '../platform/secrets.js';
import type { ClaimedDelivery } from './store.js';

export interface FanOutResult {
  events: number;
  /** The new deliveries, already claimed by the caller until `leaseUntil` (ready for their first attempt). */
  deliveries: ClaimedDelivery[];
}

interface PairRow {
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
 * Fans out up to `limit` events, oldest first. `now` stamps `dispatched_at` and the deliveries'
 * `created_at`. The deliveries are born claimed by the caller until `leaseUntil`, their first
 * attempt already counted (attempts = 1), so it needs no claim of its own; if the caller dies, the
 * sweep retakes them after the lease (for their second attempt).
 */
export async function fanOutBatch(pool: pg.Pool, limit: number, now: Date, leaseUntil: Date): Promise<FanOutResult> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // Lock and mark a batch of events, and pair each with its subscribed registrations.
    const { rows } = await client.query<PairRow>(
      `WITH ev AS (
         SELECT id, project_id, name, data, created_at FROM events
          WHERE dispatched_at IS NULL ORDER BY created_at, id LIMIT $1 FOR UPDATE SKIP LOCKED
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
      [limit, now],
    );
    const events = rows[0]?.events ?? 0;
    const pairs = rows.filter((r) => r.event_id !== null);
    let deliveries: ClaimedDelivery[] = [];
    if (pairs.length > 0) {
      const ids = pairs.map(() => newId('dlv', 24));
      const inserted = await client.query<{ id: string }>(
        `INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, event, status, attempts, next_attempt_at, created_at)
         SELECT d.id, d.project_id, d.webhook_id, d.event_id, d.event, 'pending', 1, $6, $7
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS d(id, project_id, webhook_id, event_id, event)
         ON CONFLICT (event_id, webhook_id) DO NOTHING
         RETURNING id`,
        [ids, pairs.map((p) => p.project_id), pairs.map((p) => p.webhook_id), pairs.map((p) => p.event_id), pairs.map((p) => p.name), leaseUntil, now],
      );
      const written = new Set(inserted.rows.map((r) => r.id));
      deliveries = pairs.flatMap((p, i) =>
        written.has(ids[i])
          ? [{ id: ids[i], webhookId: p.webhook_id, attempt: 1, event: p.name, url: p.url, secretEnc: p.secret_enc, dataJson: p.data_json, eventCreatedAt: p.created_at, leaseUntil }]
          : [],
      );
    }
    await client.query('COMMIT');
    return { events, deliveries };
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}

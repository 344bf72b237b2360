/**
 * Fan-out: each event of the outbox not yet dispatched becomes one delivery per active
 * registration of its project subscribed to exactly that name, each with its own id (the id the
 * receiver sees; retries reuse it). The deliveries are written in the same transaction that marks
 * the event dispatched, so an event is fanned out exactly once even with several instances
 * (`FOR UPDATE SKIP LOCKED`) or a crash halfway. Registrations made or re-enabled after the event
 * do not receive it.
 */
import type pg from 'pg';
import { newId } from '../secrets.js';
import type { ClaimedDelivery } from './store.js';

export interface FanOutResult {
  events: number;
  /** The new deliveries, already claimed by the caller until `leaseUntil` (ready for their first attempt). */
  deliveries: ClaimedDelivery[];
}

/**
 * Fans out up to `limit` events, oldest first. `now` stamps `dispatched_at` and the deliveries'
 * `created_at`. The deliveries are born claimed by the caller until `leaseUntil`, so their first
 * attempt needs no claim of its own; if the caller dies, the sweep retakes them after the lease.
 */
export async function fanOutBatch(pool: pg.Pool, limit: number, now: Date, leaseUntil: Date): Promise<FanOutResult> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const events = (
      await client.query<{ id: string; project_id: string; name: string; data_json: string; created_at: Date }>(
        `SELECT id, project_id, name, COALESCE(data::text, 'null') AS data_json, created_at FROM events WHERE dispatched_at IS NULL
          ORDER BY created_at, id LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [limit],
      )
    ).rows;
    if (events.length === 0) {
      await client.query('COMMIT');
      return { events: 0, deliveries: [] };
    }
    const projects = [...new Set(events.map((e) => e.project_id))];
    const endpoints = (
      await client.query<{ id: string; project_id: string; events: string[]; url: string; secret_enc: string }>(
        `SELECT id, project_id, events, url, secret_enc FROM webhook_endpoints WHERE project_id = ANY($1::text[]) AND is_active`,
        [projects],
      )
    ).rows;
    const byProject = new Map<string, typeof endpoints>();
    for (const e of endpoints) {
      const list = byProject.get(e.project_id) ?? [];
      list.push(e);
      byProject.set(e.project_id, list);
    }

    const cols = { id: [] as string[], project: [] as string[], webhook: [] as string[], event: [] as string[], name: [] as string[] };
    const planned = new Map<string, ClaimedDelivery>();
    for (const ev of events) {
      for (const ep of byProject.get(ev.project_id) ?? []) {
        if (!ep.events.includes(ev.name)) continue;
        const id = newId('dlv', 24);
        planned.set(id, {
          id, webhookId: ep.id, attempts: 0, event: ev.name, url: ep.url, secretEnc: ep.secret_enc,
          dataJson: ev.data_json, eventCreatedAt: ev.created_at, leaseUntil,
        });
        cols.id.push(id);
        cols.project.push(ev.project_id);
        cols.webhook.push(ep.id);
        cols.event.push(ev.id);
        cols.name.push(ev.name);
      }
    }
    let deliveries: ClaimedDelivery[] = [];
    if (cols.id.length > 0) {
      const inserted = await client.query<{ id: string; webhook_id: string }>(
        `INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, event, status, attempts, next_attempt_at, created_at)
         SELECT d.id, d.project_id, d.webhook_id, d.event_id, d.event, 'pending', 0, $6, $7
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS d(id, project_id, webhook_id, event_id, event)
         ON CONFLICT (event_id, webhook_id) DO NOTHING
         RETURNING id, webhook_id`,
        [cols.id, cols.project, cols.webhook, cols.event, cols.name, leaseUntil, now],
      );
      deliveries = inserted.rows.map((r) => planned.get(r.id)!);
    }
    await client.query(`UPDATE events SET dispatched_at = $2 WHERE id = ANY($1::text[])`, [events.map((e) => e.id), now]);
    await client.query('COMMIT');
    return { events: events.length, deliveries };
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}

/**
 * Retargeting (`auto_retarget_quality`): recipients that failed with the channel's per-user
 * marketing limit (131049) are worth one more try about 24 hours later (Meta's advice). When a
 * completed parent's `retarget_due_at` comes, they are gathered into one follow-up broadcast,
 * re-checked first: still opted in (MARKETING), not opted out, and no message from them since
 * the parent was sent (a customer who wrote back is in a conversation now). The follow-up is
 * frozen at once (its audience is exactly those recipients) and waits in `pending_approval` like
 * any campaign. At most one follow-up per broadcast: `retarget_count` is capped at 1 and a unique
 * index on `retarget_parent_id` makes a second one impossible, even from two engines at once.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { RECIPIENT_ERROR_CODE_SQL } from './store.js';
import { preflightOf } from './audience.js';

export async function spawnDueRetargets(pool: pg.Pool, now: Date): Promise<string[]> {
  const spawned: string[] = [];
  for (;;) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ id: string; project_id: string; name: string; category: string; started_at: Date }>(
        `SELECT id, project_id, name, category, started_at FROM broadcasts
         WHERE status = 'completed' AND auto_retarget_quality AND retarget_count = 0 AND retarget_due_at <= $1
         ORDER BY retarget_due_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [now],
      );
      const parent = rows[0];
      if (!parent) {
        await client.query('COMMIT');
        return spawned;
      }
      const childId = randomUUID();
      const candidates = `
        SELECT r.contact_id, r.phone, r.user_id, r.variables FROM broadcast_recipients r JOIN broadcasts b ON b.id = r.broadcast_id
        LEFT JOIN messages m ON m.project_id = b.project_id AND m.client_ref = r.message_ref
        JOIN contacts c ON c.project_id = b.project_id AND (c.phone = r.phone OR c.user_id = r.user_id)
        LEFT JOIN conversations cv ON cv.project_id = b.project_id AND cv.contact_id = c.id
        WHERE r.broadcast_id = $1 AND ${RECIPIENT_ERROR_CODE_SQL} = 131049
          AND c.opted_out_at IS NULL AND ($2 <> 'MARKETING' OR c.opted_in)
          AND (cv.last_inbound_at IS NULL OR cv.last_inbound_at < $3)`;
      const { rows: count } = await client.query<{ n: string }>(`SELECT count(*)::bigint AS n FROM (${candidates}) x`, [parent.id, parent.category, parent.started_at]);
      const n = Number(count[0].n);
      if (n === 0) {
        await client.query(`UPDATE broadcasts SET retarget_due_at = NULL WHERE id = $1`, [parent.id]);
        await client.query('COMMIT');
        continue;
      }
      await client.query(
        `INSERT INTO broadcasts (id, project_id, name, template_name, template_language, category, audience, template_variables, status,
                                 created_by, creator_name, creator_email, auto_retarget_quality, retarget_parent_id, preflight, approved_at, created_at, updated_at,
                                 route, ttl_seconds)
         SELECT $2, project_id, left('Retarget: ' || name, 200), template_name, template_language, category, jsonb_build_object('retarget_of', id::text),
                template_variables, 'pending_approval', created_by, creator_name, creator_email, false, id, $3, NULL, $4, $4, route, ttl_seconds
         FROM broadcasts WHERE id = $1`,
        [parent.id, childId, JSON.stringify(preflightOf(n, { opted_out: 0, invalid_phone: 0, not_opted_in: 0, recent_marketing_limit: 0, missing_variable: 0, duplicate: 0 }, 0, now)), now],
      );
      await client.query(
        `INSERT INTO broadcast_recipients (broadcast_id, contact_id, phone, user_id, variables, state, updated_at)
         SELECT $4::uuid, x.contact_id, x.phone, x.user_id, x.variables, 'queued', $5 FROM (${candidates}) x ON CONFLICT DO NOTHING`,
        [parent.id, parent.category, parent.started_at, childId, now],
      );
      await client.query(`UPDATE broadcasts SET retarget_count = 1, retarget_due_at = NULL WHERE id = $1`, [parent.id]);
      await client.query('COMMIT');
      spawned.push(childId);
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }
}

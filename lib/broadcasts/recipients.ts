/**
 * The engine's statements over recipient rows. Exactly-once rests on three rules:
 * 1. A recipient is claimed (`sending`) under a lease by one engine, with a fresh send reference
 *    (`message_ref`), in one statement with FOR UPDATE SKIP LOCKED: two engines never hold the
 *    same row.
 * 2. The message is recorded (`pending`, under that reference) before the channel is called. So
 *    after a crash, a claimed row whose lease ran out is judged by its message: no message means
 *    the channel was never called (sent again safely); a message means it may have been sent, so
 *    it is never sent again and its status callbacks (which echo the reference) settle it.
 * 3. Every later write is conditioned on the claim, so an engine that lost its lease cannot
 *    overwrite another's work.
 */
import type pg from 'pg';
import { utcDay } from '../messaging/quota.js';
import { MESSAGE_ACTIVITY_SET_SQL } from '../conversations/order.js';

export interface ClaimedRecipient {
  id: string;
  /** Null for a contact known only by its business-scoped user id (sent by `recipient`). */
  phone: string | null;
  user_id: string | null;
  variables: { body?: string[]; header?: string[] };
  attempts: number;
  message_ref: string;
}

/** Stale claims of a broadcast (lease over): sent-or-unknown when their message exists, else queued again. */
export async function recoverStale(pool: pg.Pool, broadcastId: string, projectId: string, now: Date): Promise<void> {
  await pool.query({
    name: 'broadcast-recover-stale',
    text: `UPDATE broadcast_recipients r SET
             state = CASE WHEN m.id IS NULL THEN 'queued' ELSE 'sent' END,
             message_ref = CASE WHEN m.id IS NULL THEN NULL ELSE r.message_ref END,
             sent_at = CASE WHEN m.id IS NULL THEN NULL ELSE m.sent_at END,
             lease_owner = NULL, lease_until = NULL, updated_at = $3
           FROM broadcast_recipients r2 LEFT JOIN messages m ON m.project_id = $2 AND m.client_ref = r2.message_ref
           WHERE r2.id = r.id AND r.broadcast_id = $1 AND r.state = 'sending' AND r.lease_until < $3`,
    values: [broadcastId, projectId, now],
  });
}

export async function claimBatch(pool: pg.Pool, broadcastId: string, owner: string, size: number, now: Date, leaseUntil: Date): Promise<ClaimedRecipient[]> {
  const { rows } = await pool.query<ClaimedRecipient>({
    name: 'broadcast-claim',
    text: `UPDATE broadcast_recipients r SET state = 'sending', lease_owner = $2, lease_until = $4, attempts = r.attempts + 1,
                  message_ref = 'snd_' || substr(md5(random()::text || clock_timestamp()::text || r.id::text), 1, 24), updated_at = $5
           WHERE r.id IN (SELECT id FROM broadcast_recipients
                          WHERE broadcast_id = $1 AND state = 'queued' AND (not_before IS NULL OR not_before <= $5)
                          ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
           RETURNING r.id::text AS id, r.phone, r.user_id, r.variables, r.attempts, r.message_ref`,
    values: [broadcastId, owner, size, leaseUntil, now],
  });
  return rows;
}

/** Extends this engine's claims on `ids`; answers the ids it still holds. */
export async function extendClaims(pool: pg.Pool, ids: string[], owner: string, leaseUntil: Date): Promise<Set<string>> {
  const { rows } = await pool.query<{ id: string }>({
    name: 'broadcast-extend-claims',
    text: `UPDATE broadcast_recipients SET lease_until = $3 WHERE id = ANY($1::bigint[]) AND lease_owner = $2 AND state = 'sending' RETURNING id::text AS id`,
    values: [ids, owner, leaseUntil],
  });
  return new Set(rows.map((r) => r.id));
}

/** Puts claimed rows back (quota held them, or the engine stops): no message was recorded for them. */
export async function unclaim(pool: pg.Pool, ids: string[], owner: string, now: Date, notBefore: Date | null): Promise<void> {
  if (!ids.length) return;
  await pool.query(
    `UPDATE broadcast_recipients SET state = 'queued', message_ref = NULL, lease_owner = NULL, lease_until = NULL, attempts = GREATEST(0, attempts - 1),
            not_before = $4, updated_at = $3
     WHERE id = ANY($1::bigint[]) AND lease_owner = $2 AND state = 'sending'`,
    [ids, owner, now, notBefore],
  );
}

/** Records the batch's messages (pending, under their references) in one statement, before any channel call. */
export async function recordIntents(
  pool: pg.Pool,
  projectId: string,
  batch: Array<{ phone: string | null; userId?: string | null; ref: string; content: unknown }>,
  at: Date,
): Promise<void> {
  await pool.query({
    name: 'broadcast-record-intents',
    text: `WITH input AS (
             SELECT * FROM unnest($2::text[], $3::text[], $4::jsonb[], $6::text[]) AS i(phone, ref, content, user_id)
           ), ct AS (
             INSERT INTO contacts (project_id, phone, created_at, updated_at) SELECT $1, phone, $5, $5 FROM input WHERE phone IS NOT NULL
             ON CONFLICT (project_id, phone) DO UPDATE SET phone = EXCLUDED.phone
             RETURNING id, phone, NULL::text AS user_id
           ), cu AS (
             -- A recipient without a phone is its contact by business-scoped user id.
             SELECT id, NULL::text AS phone, user_id FROM contacts
             WHERE project_id = $1 AND user_id IN (SELECT user_id FROM input WHERE phone IS NULL)
           ), cs AS (
             SELECT * FROM ct UNION ALL SELECT * FROM cu
           ), cv AS (
             INSERT INTO conversations (project_id, contact_id, last_message_at, created_at, updated_at)
             SELECT $1, cs.id, $5, $5, $5 FROM cs
             ON CONFLICT (project_id, contact_id) DO UPDATE SET ${MESSAGE_ACTIVITY_SET_SQL}
             RETURNING id, contact_id
           )
           INSERT INTO messages (project_id, conversation_id, wamid, client_ref, direction, type, content, status, sent_at, status_at)
           SELECT $1, cv.id, i.ref, i.ref, 'outbound', 'template', i.content, 'pending', $5, $5
           FROM input i JOIN cs ON (cs.phone = i.phone OR (i.phone IS NULL AND cs.user_id = i.user_id)) JOIN cv ON cv.contact_id = cs.id`,
    values: [projectId, batch.map((b) => b.phone), batch.map((b) => b.ref), batch.map((b) => JSON.stringify(b.content)), at, batch.map((b) => b.userId ?? null)],
  });
}

/** Status callbacks update the same message rows in their own order: a deadlock is tried again. */
export async function retryDeadlock<T>(run: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await run();
    } catch (e) {
      if ((e as { code?: string }).code !== '40P01' || i >= attempts) throw e;
      await new Promise((r) => setTimeout(r, 10 * i));
    }
  }
}

/** The channel accepted these sends: messages get their wamids, recipients become `sent`. */
export async function confirmBatch(pool: pg.Pool, projectId: string, owner: string, sent: Array<{ id: string; ref: string; wamid: string }>, at: Date): Promise<void> {
  if (!sent.length) return;
  // A fixed order (by wamid, as the status side locks) keeps lock waits short.
  sent = [...sent].sort((a, b) => (a.wamid < b.wamid ? -1 : a.wamid > b.wamid ? 1 : 0));
  await retryDeadlock(() => pool.query({
    name: 'broadcast-confirm',
    text: `WITH input AS (SELECT * FROM unnest($2::bigint[], $3::text[], $4::text[]) AS i(id, ref, wamid)),
           msg AS (
             UPDATE messages m SET wamid = i.wamid, status = CASE WHEN m.status = 'pending' THEN 'sent' ELSE m.status END,
                    status_at = CASE WHEN m.status = 'pending' THEN $6 ELSE m.status_at END
             FROM input i WHERE m.project_id = $1 AND m.client_ref = i.ref
           )
           UPDATE broadcast_recipients r SET state = 'sent', wamid = i.wamid, sent_at = $6, lease_owner = NULL, lease_until = NULL, updated_at = $6
           FROM input i WHERE r.id = i.id AND r.lease_owner = $5 AND r.state = 'sending'`,
    values: [projectId, sent.map((s) => s.id), sent.map((s) => s.ref), sent.map((s) => s.wamid), owner, at],
  }));
}

/** The send's outcome is unknown (timeout): the message stays pending and its statuses settle it; never sent again. */
export async function markUnknown(pool: pg.Pool, id: string, owner: string, at: Date): Promise<void> {
  await pool.query(
    `UPDATE broadcast_recipients SET state = 'sent', lease_owner = NULL, lease_until = NULL, updated_at = $3 WHERE id = $1 AND lease_owner = $2 AND state = 'sending'`,
    [id, owner, at],
  );
}

/**
 * The channel certainly did not send: the pending message goes, its quota unit comes back, and
 * the recipient is queued again (after `notBefore`) or failed with the error, in one statement.
 */
export async function settleFailure(
  pool: pg.Pool,
  projectId: string,
  owner: string,
  r: { id: string; ref: string },
  day: Date,
  at: Date,
  next: { retryAt: Date } | { code: number | null; category: string; title: string | null },
): Promise<void> {
  const retry = 'retryAt' in next;
  await retryDeadlock(() => pool.query({
    name: 'broadcast-settle-failure',
    text: `WITH gone AS (DELETE FROM messages WHERE project_id = $1 AND client_ref = $3 AND status = 'pending' RETURNING 1),
           quota AS (UPDATE send_counters SET count = count - 1 WHERE project_id = $1 AND day = $4::date AND count > 0 AND EXISTS (SELECT 1 FROM gone))
           UPDATE broadcast_recipients SET
             state = CASE WHEN $6::boolean THEN 'queued' ELSE 'failed' END,
             not_before = CASE WHEN $6::boolean THEN $7::timestamptz ELSE not_before END,
             message_ref = NULL, lease_owner = NULL, lease_until = NULL,
             error_code = CASE WHEN $6::boolean THEN error_code ELSE $8::int END,
             error_category = CASE WHEN $6::boolean THEN error_category ELSE $9 END,
             error_title = CASE WHEN $6::boolean THEN error_title ELSE $10 END,
             updated_at = $5
           WHERE id = $2 AND lease_owner = $11 AND state = 'sending'`,
    values: [
      projectId, r.id, r.ref, utcDay(day), at, retry, retry ? next.retryAt : null,
      retry ? null : next.code, retry ? null : next.category, retry ? null : next.title, owner,
    ],
  }));
}

/**
 * Takes up to `wanted` units of the project's daily quota at once; answers how many it got. A
 * quota that runs out holds the rest of the campaign until the next UTC day (never fails them).
 */
export async function reserveQuota(pool: pg.Pool, projectId: string, wanted: number, now: Date): Promise<number> {
  await pool.query({
    name: 'broadcast-quota-row',
    text: 'INSERT INTO send_counters (project_id, day, count) VALUES ($1, $2::date, 0) ON CONFLICT DO NOTHING',
    values: [projectId, utcDay(now)],
  });
  const { rows } = await pool.query<{ granted: number }>({
    name: 'broadcast-quota',
    text: `WITH old AS (SELECT count FROM send_counters WHERE project_id = $1 AND day = $2::date FOR UPDATE)
           UPDATE send_counters s SET count = s.count + GREATEST(0, LEAST($3, (SELECT daily_send_quota FROM projects WHERE id = $1) - s.count))
           FROM old WHERE s.project_id = $1 AND s.day = $2::date
           RETURNING (s.count - old.count)::int AS granted`,
    values: [projectId, utcDay(now), wanted],
  });
  return rows[0]?.granted ?? 0;
}

/** Gives back units reserved and not used. */
export async function returnQuota(pool: pg.Pool, projectId: string, units: number, day: Date): Promise<void> {
  if (units <= 0) return;
  await pool.query('UPDATE send_counters SET count = GREATEST(0, count - $3) WHERE project_id = $1 AND day = $2::date', [projectId, utcDay(day), units]);
}

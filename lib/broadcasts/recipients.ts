/**
 * The engine's statements over recipient rows. Exactly-once rests on three rules:
 * 1. A recipient is claimed (`sending`) under a lease by one engine, with a fresh send reference
 *    (`send_ref`), in one statement with FOR UPDATE SKIP LOCKED: two engines never hold the
 *    same row.
 * 2. The message is recorded (`pending`, under that reference) by the send ledger
 *    (lib/messaging/ledger.ts, which also holds the quota) before the channel is called. So
 *    after a crash, a claimed row whose lease ran out is judged by its message: no message means
 *    the channel was never called (sent again safely); a message means it may have been sent, so
 *    it is never sent again and its status callbacks (which echo the reference) settle it.
 * 3. Every later write is conditioned on the claim, so an engine that lost its lease cannot
 *    overwrite another's work.
 * This module is the only writer of `broadcast_recipients`: the audience's freeze and the
 * retarget's child write their rows through insertRecipientsSql, and a contact merge moves them
 * through moveRecipientsToContact (lib/conversations/identity.ts calls it through Deps.contactMerge).
 */
import { execute, executeNamed, queryRows, queryRowsNamed, type Tx } from '../platform/db/tx.js';
import { REACH_KEY_SQL } from '../pricing/portfolio-reach.js';
import { CLAIM_ROWS } from '../platform/db/claims.js';

export interface ClaimedRecipient {
  id: string;
  /** Null for a contact known only by its business-scoped user id (sent by `recipient`). */
  phone: string | null;
  user_id: string | null;
  variables: { body?: string[]; header?: string[]; cards?: Array<{ body?: string[] }> };
  attempts: number;
  send_ref: string;
}

/**
 * Stale claims of a broadcast (lease over), judged by their message: none means the channel was
 * never called (queued again); a message the channel confirmed makes the recipient `sent` with its
 * wamid; a message still pending (a crash between recording and calling, or before the confirm)
 * makes it `unknown`: never sent again, its message is settled by a status or by the ledger's
 * unknown-outcome rule, and the public status follows the message.
 */
export async function recoverStale(db: Tx, broadcastId: string, projectId: string, now: Date): Promise<void> {
  await executeNamed(
    db,
    'broadcast-recover-stale',
    `UPDATE broadcast_recipients r SET
             state = CASE WHEN m.id IS NULL THEN 'queued' WHEN m.status IN ('pending', 'unknown') THEN 'unknown' ELSE 'sent' END,
             send_ref = CASE WHEN m.id IS NULL THEN NULL ELSE r.send_ref END,
             wamid = CASE WHEN m.status NOT IN ('pending', 'unknown') THEN m.wamid END,
             sent_at = CASE WHEN m.id IS NULL THEN NULL ELSE m.sent_at END,
             lease_owner = NULL, lease_until = NULL, updated_at = $3
           FROM broadcast_recipients r2 LEFT JOIN messages m ON m.project_id = $2 AND m.send_ref = r2.send_ref
           WHERE r2.id = r.id AND r.broadcast_id = $1 AND r.state = 'sending' AND r.lease_until < $3`,
    broadcastId, projectId, now,
  );
}

/**
 * Claims up to `size` queued recipients whose backoff (`not_before`, wall clock `now`) and
 * messaging-limit hold (`limit_held_until`, business clock `businessNow`) are over.
 */
export async function claimBatch(
  db: Tx, broadcastId: string, owner: string, size: number, now: Date, leaseUntil: Date, businessNow: Date,
): Promise<ClaimedRecipient[]> {
  const rows = await queryRowsNamed<ClaimedRecipient>(
    db,
    'broadcast-claim',
    `UPDATE broadcast_recipients r SET state = 'sending', lease_owner = $2, lease_until = $4, attempts = r.attempts + 1,
                  send_ref = 'snd_' || substr(md5(random()::text || clock_timestamp()::text || r.id::text), 1, 24), updated_at = $5,
                  limit_held_until = NULL
           WHERE r.id IN (SELECT id FROM broadcast_recipients
                          WHERE broadcast_id = $1 AND state = 'queued' AND (not_before IS NULL OR not_before <= $5)
                            AND (limit_held_until IS NULL OR limit_held_until <= $6)
                          ORDER BY id LIMIT $3 ${CLAIM_ROWS})
           RETURNING r.id::text AS id, r.phone, r.user_id, r.variables, r.attempts, r.send_ref`,
    broadcastId, owner, size, leaseUntil, now, businessNow,
  );
  return rows;
}

/**
 * The portfolio's messaging limit is reached: these claims go back to the queue, and every queued
 * recipient of the campaign not already reached in the window is held until `until` (when the
 * oldest user leaves the window). They count `held`; the claim takes them again from then on.
 */
export async function holdForLimit(db: Tx, broadcastId: string, ids: string[], owner: string, wabaId: string, until: Date, businessNow: Date, now: Date): Promise<void> {
  await executeNamed(
    db,
    'broadcast-hold-for-limit',
    `WITH back AS (
             UPDATE broadcast_recipients SET state = 'queued', lease_owner = NULL, lease_until = NULL, send_ref = NULL,
                    attempts = GREATEST(attempts - 1, 0), limit_held_until = $5, updated_at = $7
             WHERE id = ANY($2::bigint[]) AND lease_owner = $3 AND state = 'sending'
           )
           UPDATE broadcast_recipients r SET limit_held_until = $5, updated_at = $7
           WHERE r.broadcast_id = $1 AND r.state = 'queued' AND (r.limit_held_until IS NULL OR r.limit_held_until <= $6)
             AND NOT EXISTS (SELECT 1 FROM portfolio_reach p WHERE p.waba_id = $4 AND p.user_key = ${REACH_KEY_SQL} AND p.reached_at > $6::timestamptz - interval '24 hours')`,
    broadcastId, ids, owner, wabaId, until, businessNow, now,
  );
}

/**
 * Extends this engine's claims; answers the ids it still holds. A claim is its row and its send
 * reference: a row this engine lost (its lease ran out while a call hung) and claimed again under
 * a new reference is not the old claim, so the old batch does not send it a second time.
 */
export async function extendClaims(db: Tx, claims: Array<{ id: string; ref: string }>, owner: string, leaseUntil: Date): Promise<Set<string>> {
  const rows = await queryRowsNamed<{ id: string }>(
    db,
    'broadcast-extend-claims',
    `UPDATE broadcast_recipients r SET lease_until = $4 FROM unnest($1::bigint[], $2::text[]) AS i(id, ref)
           WHERE r.id = i.id AND r.send_ref = i.ref AND r.lease_owner = $3 AND r.state = 'sending' RETURNING r.id::text AS id`,
    claims.map((c) => c.id), claims.map((c) => c.ref), owner, leaseUntil,
  );
  return new Set(rows.map((r) => r.id));
}

/** Puts claimed rows back (quota held them, or the engine stops): no message was recorded for them. */
export async function unclaim(db: Tx, ids: string[], owner: string, now: Date, notBefore: Date | null): Promise<void> {
  if (!ids.length) return;
  await execute(
    db,
    `UPDATE broadcast_recipients SET state = 'queued', send_ref = NULL, lease_owner = NULL, lease_until = NULL, attempts = GREATEST(0, attempts - 1),
            not_before = $4, updated_at = $3
     WHERE id = ANY($1::bigint[]) AND lease_owner = $2 AND state = 'sending'`,
    ids, owner, now, notBefore,
  );
}

/**
 * The channel accepted these sends (their messages are confirmed in the send ledger first):
 * recipients become `sent` with their wamids.
 */
export async function markSent(db: Tx, owner: string, sent: Array<{ id: string; ref: string; wamid: string }>, at: Date): Promise<void> {
  if (!sent.length) return;
  await executeNamed(
    db,
    'broadcast-mark-sent',
    `UPDATE broadcast_recipients r SET state = 'sent', wamid = i.wamid, sent_at = $5, lease_owner = NULL, lease_until = NULL, updated_at = $5
           FROM unnest($1::bigint[], $2::text[], $3::text[]) AS i(id, ref, wamid)
           WHERE r.id = i.id AND r.send_ref = i.ref AND r.lease_owner = $4 AND r.state = 'sending'`,
    sent.map((s) => s.id), sent.map((s) => s.ref), sent.map((s) => s.wamid), owner, at,
  );
}

/**
 * The send's outcome is unknown (the answer was lost): the recipient is `unknown`, never sent
 * again; its message stays pending until a status (which echoes the reference) or the ledger's
 * unknown-outcome rule settles it, and its public status follows the message.
 */
export async function markUnknown(db: Tx, claim: { id: string; ref: string }, owner: string, at: Date): Promise<void> {
  await execute(
    db,
    `UPDATE broadcast_recipients SET state = 'unknown', lease_owner = NULL, lease_until = NULL, updated_at = $3
     WHERE id = $1 AND send_ref = $4 AND lease_owner = $2 AND state = 'sending'`,
    claim.id, owner, at, claim.ref,
  );
}

/**
 * The channel certainly did not send (its pending message and quota unit were abandoned in the
 * send ledger first): the recipient is queued again (after `notBefore`) or failed with the error.
 * A crash between the two leaves the claim with no message, which recovery queues again: the
 * channel never had it.
 */
export async function settleFailure(
  db: Tx,
  owner: string,
  claim: { id: string; ref: string },
  at: Date,
  next: { retryAt: Date } | { code: number | null; category: string; title: string | null; reason?: string | null },
): Promise<void> {
  const retry = 'retryAt' in next;
  await executeNamed(
    db,
    'broadcast-settle-failure',
    `UPDATE broadcast_recipients SET
             state = CASE WHEN $3::boolean THEN 'queued' ELSE 'failed' END,
             not_before = CASE WHEN $3::boolean THEN $4::timestamptz ELSE not_before END,
             send_ref = NULL, lease_owner = NULL, lease_until = NULL,
             error_code = CASE WHEN $3::boolean THEN error_code ELSE $5::int END,
             error_category = CASE WHEN $3::boolean THEN error_category ELSE $6 END,
             error_title = CASE WHEN $3::boolean THEN error_title ELSE $7 END,
             error_reason = CASE WHEN $3::boolean THEN error_reason ELSE $10 END,
             updated_at = $2
           WHERE id = $1 AND send_ref = $9 AND lease_owner = $8 AND state = 'sending'`,
    claim.id, at, retry, retry ? next.retryAt : null, retry ? null : next.code, retry ? null : next.category, retry ? null : next.title, owner, claim.ref,
    retry ? null : next.reason ?? null,
  );
}

/** The campaign stopped (canceled, failed): recipients not yet handed to the channel are canceled. */
export async function cancelUnsent(db: Tx, broadcastId: string, now: Date): Promise<void> {
  await execute(
    db,
    `UPDATE broadcast_recipients SET state = 'canceled', updated_at = $2 WHERE broadcast_id = $1 AND state IN ('queued', 'held')`,
    broadcastId, now,
  );
}

/**
 * Consent is checked again when sending starts and at each wave: a contact who opted out since
 * approval (or, for MARKETING, is no longer opted in) is not sent to; the recipient is canceled
 * with the reason.
 */
export async function cancelOptedOutWaiting(db: Tx, broadcastId: string, now: Date): Promise<void> {
  await execute(
    db,
    `UPDATE broadcast_recipients r SET state = 'canceled', error_category = 'permanent', error_title = 'opted out after approval', updated_at = $2
     FROM broadcasts b, contacts c
     WHERE r.broadcast_id = $1 AND b.id = r.broadcast_id AND c.project_id = b.project_id AND c.id = r.contact_id
       AND r.state IN ('queued', 'held') AND (c.opted_out_at IS NOT NULL OR (b.category = 'MARKETING' AND NOT c.opted_in))`,
    broadcastId, now,
  );
}

/** Queues the next wave: `count` held recipients (all when null), in order; answers whether any stay held. */
export async function queueNextWave(db: Tx, broadcastId: string, count: number | null, now: Date): Promise<boolean> {
  const rows = await queryRows<{ held: string; released: string }>(
    db,
    `WITH next AS (
       SELECT id FROM broadcast_recipients WHERE broadcast_id = $1 AND state = 'held' ORDER BY id
       LIMIT COALESCE($2::int, 2147483647) ${CLAIM_ROWS}
     ), released AS (
       UPDATE broadcast_recipients r SET state = 'queued', wave = (SELECT COALESCE(max(wave), 1) + 1 FROM broadcast_recipients WHERE broadcast_id = $1 AND state <> 'held'), updated_at = $3
       FROM next WHERE r.id = next.id RETURNING r.id
     )
     SELECT (SELECT count(*) FROM broadcast_recipients WHERE broadcast_id = $1 AND state = 'held')::bigint AS held,
            (SELECT count(*) FROM released)::bigint AS released`,
    broadcastId, count, now,
  );
  return Number(rows[0].held) > Number(rows[0].released);
}

/**
 * The statement that writes a campaign's recipient rows: `select` yields (broadcast_id,
 * contact_id, phone, user_id, variables, state, wave, updated_at); a recipient already there is
 * skipped. The audience's freeze and the retarget's child build their selects.
 */
export function insertRecipientsSql(select: string): string {
  return `INSERT INTO broadcast_recipients (broadcast_id, contact_id, phone, user_id, variables, state, wave, updated_at)
          ${select}
          ON CONFLICT DO NOTHING`;
}

/**
 * Of the claimed recipients about to be sent, cancels those whose contact opted out since
 * approval (or, for MARKETING, is no longer opted in): canceled with the reason, never sent.
 * Answers the ids still to send. One statement per batch, so a contact who writes STOP while the
 * campaign runs is skipped from the next batch on.
 */
export async function cancelOptedOutClaims(db: Tx, broadcastId: string, ids: string[], owner: string, now: Date): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const rows = await queryRows<{ id: string }>(
    db,
    `UPDATE broadcast_recipients r SET state = 'canceled', error_category = 'permanent', error_title = 'opted out after approval',
            send_ref = NULL, lease_owner = NULL, lease_until = NULL, updated_at = $4
     FROM broadcasts b, contacts c
     WHERE r.id = ANY($2::bigint[]) AND r.broadcast_id = $1 AND r.lease_owner = $3 AND r.state = 'sending'
       AND b.id = r.broadcast_id AND c.project_id = b.project_id AND c.id = r.contact_id
       AND (c.opted_out_at IS NOT NULL OR (b.category = 'MARKETING' AND NOT c.opted_in))
     RETURNING r.id::text AS id`,
    broadcastId, ids, owner, now,
  );
  const gone = new Set(rows.map((r) => r.id));
  return new Set(ids.filter((id) => !gone.has(id)));
}

/** A contact merge's move (lib/conversations/identity.ts): recipient rows of contact `from` now name `to`. */
export async function moveRecipientsToContact(tx: Tx, to: bigint, from: bigint): Promise<void> {
  await execute(tx, `UPDATE broadcast_recipients SET contact_id = $1::bigint WHERE contact_id = $2::bigint`, String(to), String(from));
}

/**
 * The bot's inbox: each inbound message the deployed bot has to handle, written in the transaction
 * that stores the message and deleted once the bot has handled it (lib/bot/runtime.ts).
 *
 * Policy and why:
 * - A row is leased to the instance that received the message (BOT_INBOX_LEASE_MS, renewed while the
 *   message waits or runs there). A row whose lease ran out belongs to a process that died
 *   (restart, kill -9) or could not delete it (a database outage): any instance's reclaim pass
 *   takes it (FOR UPDATE SKIP LOCKED, so two passes never take one row) and hands it to its bot.
 * - A message cut off after the bot's reply was sent and before the row was deleted is handled
 *   again; its sends carry the same references as the first time (lib/bot/runtime.ts, sendRef), so
 *   a reply that had gone out is not sent twice, and one whose outcome the crash left unknown
 *   (pending) is not sent again (at most once, as every send). Other effects (state, tables,
 *   events) repeat.
 * - Poison events are set aside: each run of the bot on an event is recorded as started
 *   (`run_started_at`) before it begins. A run that ends abnormally (its sandbox process crashed,
 *   a time or memory limit; lib/bot/runtime.ts) counts one, and so does a run a reclaim finds
 *   started by a process that died. At BOT_MAX_ABNORMAL_RUNS the event is set aside: it stays in
 *   this table with its reason for the operator, is logged to the bot log, and is never handed to
 *   the bot again (a restart included). Below it, the event goes back to the inbox and a reclaim
 *   pass tries it again; later messages of the same customer do not wait for it.
 * - A message handed over MAX_HANDOVERS times for any other reason is set aside too.
 * - Times come from the service's clock, so tests move leases with a manual clock, not sleeps.
 */
import type pg from 'pg';
import type { Prisma } from '../../generated/prisma/client.js';
import { inboundText, type BotInboundMessage } from './types.js';

/** Hand-overs after which a message is given up. */
export const MAX_HANDOVERS = 20;
/** Rows one reclaim pass takes. */
export const RECLAIM_BATCH = 200;

/** Records, in the storing transaction, that the bot has `messageId` to handle (leased to this instance). */
export async function addToInbox(tx: Prisma.TransactionClient, projectId: string, messageId: bigint, now: Date, leaseMs: number): Promise<void> {
  await tx.botInbox.create({ data: { key: `message:${messageId}`, kind: 'message', messageId, projectId, leaseUntil: new Date(now.getTime() + leaseMs), createdAt: now } });
}

/** The bot handled the message (or it is gone): it leaves the inbox. A set-aside event stays. */
export async function removeFromInbox(pool: pg.Pool, messageId: bigint): Promise<void> {
  await pool.query('DELETE FROM bot_inbox WHERE message_id = $1 AND set_aside_at IS NULL', [messageId.toString()]);
}

/** A run of the bot on the event begins; false when the event is no longer to be run (gone, set aside). */
export async function markRunStarted(pool: pg.Pool, messageId: bigint, now: Date): Promise<boolean> {
  const res = await pool.query('UPDATE bot_inbox SET run_started_at = $2 WHERE message_id = $1 AND set_aside_at IS NULL', [messageId.toString(), now]);
  return (res.rowCount ?? 0) > 0;
}

/**
 * A run ended abnormally: counted, and the event is either set aside (at `max`) or given back to
 * the inbox at once for a reclaim pass to try again. Undefined when it is no longer there.
 */
export async function recordAbnormalRun(pool: pg.Pool, messageId: bigint, reason: string, now: Date, max: number): Promise<{ runs: number; setAside: boolean } | undefined> {
  const res = await pool.query<{ abnormal_runs: number; set_aside: boolean }>(
    `UPDATE bot_inbox SET abnormal_runs = abnormal_runs + 1, run_started_at = NULL, lease_until = $2::timestamptz,
            set_aside_at = CASE WHEN abnormal_runs + 1 >= $3::int THEN $2::timestamptz END,
            set_aside_reason = CASE WHEN abnormal_runs + 1 >= $3::int THEN $4::text END
      WHERE message_id = $1 AND set_aside_at IS NULL
      RETURNING abnormal_runs, set_aside_at IS NOT NULL AS set_aside`,
    [messageId.toString(), now, max, reason],
  );
  const row = res.rows[0];
  return row && { runs: row.abnormal_runs, setAside: row.set_aside };
}

/** Sets the event aside for good (kept with its reason; never handed to the bot again). */
export async function setAside(pool: pg.Pool, messageId: bigint, reason: string, now: Date): Promise<void> {
  await pool.query('UPDATE bot_inbox SET set_aside_at = $2, set_aside_reason = $3, run_started_at = NULL WHERE message_id = $1 AND set_aside_at IS NULL', [messageId.toString(), now, reason]);
}

export interface SetAsideEvent {
  message_id: string;
  abnormal_runs: number;
  reason: string;
  set_aside_at: Date;
  received_at: Date;
}

/** A project's set-aside events, newest first. */
export async function listSetAside(pool: pg.Pool, projectId: string, limit: number): Promise<SetAsideEvent[]> {
  const res = await pool.query<SetAsideEvent>(
    `SELECT m.wamid AS message_id, b.abnormal_runs, b.set_aside_reason AS reason, b.set_aside_at, b.created_at AS received_at
       FROM bot_inbox b JOIN messages m ON m.id = b.message_id
      WHERE b.project_id = $1 AND b.set_aside_at IS NOT NULL ORDER BY b.set_aside_at DESC, b.message_id DESC LIMIT $2`,
    [projectId, limit],
  );
  return res.rows;
}

/** Keeps the messages this instance still holds (waiting or running) from being taken by another. */
export async function renewLeases(pool: pg.Pool, messageIds: bigint[], now: Date, leaseMs: number): Promise<void> {
  if (!messageIds.length) return;
  await pool.query('UPDATE bot_inbox SET lease_until = $2 WHERE message_id = ANY($1::bigint[])', [messageIds.map(String), new Date(now.getTime() + leaseMs)]);
}

export interface ReclaimedEvent {
  projectId: string;
  inboxId: bigint;
  /** Hand-overs so far, this one included. */
  handovers: number;
  /** Abnormal runs so far, a run the dead process had started included. */
  abnormalRuns: number;
  /** The process that held it had started a run on it (it died mid-run). */
  diedMidRun: boolean;
  /** Undefined when the message is gone (its project was deleted). */
  message?: BotInboundMessage;
}

/** Takes up to RECLAIM_BATCH messages whose lease ran out, oldest first, leased to the caller. */
export async function reclaimExpired(pool: pg.Pool, now: Date, leaseMs: number): Promise<ReclaimedEvent[]> {
  const { rows } = await pool.query<{
    message_id: string; project_id: string; attempts: number; abnormal_runs: number; died_mid_run: boolean; created_at: Date;
    wamid: string | null; type: string | null; content: Record<string, unknown> | null;
    conversation_id: string | null; state: string | null; phone: string | null; user_id: string | null; username: string | null; name: string | null;
  }>(
    `WITH due AS (
       SELECT message_id, run_started_at IS NOT NULL AS died_mid_run FROM bot_inbox
        WHERE lease_until <= $1 AND set_aside_at IS NULL ORDER BY message_id LIMIT $3 FOR UPDATE SKIP LOCKED
     ), taken AS (
       UPDATE bot_inbox b SET lease_until = $2, attempts = b.attempts + 1,
              abnormal_runs = b.abnormal_runs + due.died_mid_run::int, run_started_at = NULL
         FROM due WHERE b.message_id = due.message_id
       RETURNING b.message_id, b.project_id, b.attempts, b.abnormal_runs, due.died_mid_run, b.created_at
     )
     SELECT t.message_id, t.project_id, t.attempts, t.abnormal_runs, t.died_mid_run, t.created_at, m.wamid, m.type, m.content, c.id AS conversation_id, c.state, k.phone, k.user_id, k.username, k.name
       FROM taken t
       LEFT JOIN messages m ON m.id = t.message_id
       LEFT JOIN conversations c ON c.id = m.conversation_id
       LEFT JOIN contacts k ON k.id = c.contact_id
      ORDER BY t.message_id`,
    [now, new Date(now.getTime() + leaseMs), RECLAIM_BATCH],
  );
  return rows.map((r) => ({
    projectId: r.project_id,
    inboxId: BigInt(r.message_id),
    handovers: r.attempts,
    abnormalRuns: r.abnormal_runs,
    diedMidRun: r.died_mid_run,
    message:
      r.wamid && (r.phone || r.user_id) && r.conversation_id
        ? {
            id: r.wamid, from: (r.phone ?? r.user_id)!, type: r.type!, text: inboundText(r.type!, r.content ?? {}), raw: r.content ?? {},
            conversation: { id: Number(r.conversation_id), state: r.state! },
            contact: { phone: r.phone, user_id: r.user_id, username: r.username, name: r.name }, received_at: r.created_at.toISOString(),
          }
        : undefined,
  }));
}

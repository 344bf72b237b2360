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
 * - A message handed over MAX_HANDOVERS times is given up and logged to the bot log (a message
 *   that kills its process each time must not do so forever).
 * - Times come from the service's clock, so tests move leases with a manual clock, not sleeps.
 */
import type pg from 'pg';
import type { Prisma } from '../../generated/prisma/client.js';
import { inboundText, type BotInboundMessage } from './types.js';

/** Hand-overs after which a message is given up. */
export const MAX_HANDOVERS = 5;
/** Rows one reclaim pass takes. */
export const RECLAIM_BATCH = 200;

/** Records, in the storing transaction, that the bot has `messageId` to handle (leased to this instance). */
export async function addToInbox(tx: Prisma.TransactionClient, projectId: string, messageId: bigint, now: Date, leaseMs: number): Promise<void> {
  await tx.botInbox.create({ data: { messageId, projectId, leaseUntil: new Date(now.getTime() + leaseMs), createdAt: now } });
}

/** The bot handled the message (or gave it up): it leaves the inbox. */
export async function removeFromInbox(pool: pg.Pool, messageId: bigint): Promise<void> {
  await pool.query('DELETE FROM bot_inbox WHERE message_id = $1', [messageId.toString()]);
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
  /** Undefined when the message is gone (its project was deleted). */
  message?: BotInboundMessage;
}

/** Takes up to RECLAIM_BATCH messages whose lease ran out, oldest first, leased to the caller. */
export async function reclaimExpired(pool: pg.Pool, now: Date, leaseMs: number): Promise<ReclaimedEvent[]> {
  const { rows } = await pool.query<{
    message_id: string; project_id: string; attempts: number; created_at: Date;
    wamid: string | null; type: string | null; content: Record<string, unknown> | null;
    conversation_id: string | null; state: string | null; phone: string | null; user_id: string | null; username: string | null; name: string | null;
  }>(
    `WITH due AS (
       SELECT message_id FROM bot_inbox WHERE lease_until <= $1 ORDER BY message_id LIMIT $3 FOR UPDATE SKIP LOCKED
     ), taken AS (
       UPDATE bot_inbox b SET lease_until = $2, attempts = b.attempts + 1 FROM due WHERE b.message_id = due.message_id
       RETURNING b.message_id, b.project_id, b.attempts, b.created_at
     )
     SELECT t.message_id, t.project_id, t.attempts, t.created_at, m.wamid, m.type, m.content, c.id AS conversation_id, c.state, k.phone, k.user_id, k.username, k.name
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

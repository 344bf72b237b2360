/**
 * Finding and recording contacts, conversations and messages: shared by sending (outbound) and
 * the channel webhook (inbound). Writes happen in one transaction per message.
 */
import type pg from 'pg';
import type { Prisma } from '../../generated/prisma/client.js';

export const WINDOW_MS = 24 * 60 * 60 * 1000;

type Tx = Prisma.TransactionClient;

export function windowOpen(lastInboundAt: Date | null | undefined, now: Date): boolean {
  return !!lastInboundAt && lastInboundAt.getTime() + WINDOW_MS > now.getTime();
}

/** The contact and conversation for a phone, created when missing. */
export async function upsertConversation(tx: Tx, projectId: string, phone: string, at: Date, opts: { inbound: boolean; profileName?: string }) {
  const contact = await tx.contact.upsert({
    where: { projectId_phone: { projectId, phone } },
    create: { projectId, phone, name: opts.profileName ?? null },
    update: {},
  });
  if (opts.profileName && !contact.name) {
    await tx.contact.update({ where: { id: contact.id }, data: { name: opts.profileName } });
  }
  const existing = await tx.conversation.findUnique({ where: { projectId_contactId: { projectId, contactId: contact.id } } });
  if (!existing) {
    return tx.conversation.create({
      data: { projectId, contactId: contact.id, lastMessageAt: at, lastInboundAt: opts.inbound ? at : null },
      include: { contact: true },
    });
  }
  // Activity only moves forward, so a late or replayed message never pulls a conversation down.
  return tx.conversation.update({
    where: { id: existing.id },
    data: {
      lastMessageAt: existing.lastMessageAt > at ? existing.lastMessageAt : at,
      ...(opts.inbound && (!existing.lastInboundAt || existing.lastInboundAt < at) ? { lastInboundAt: at } : {}),
    },
    include: { contact: true },
  });
}

/**
 * Records a send before the channel is called, in one statement (contact, conversation, message),
 * because it runs for every message: the message is `pending` under our reference `ref` (its wamid
 * until the channel names one), the conversation moves up the recent-activity order, its state is
 * untouched. With an Idempotency-Key, the key is linked to the reference in the same statement, so
 * a crash after this point can never lead the key to send again (middleware/idempotency.ts).
 */
export async function recordIntent(
  pool: pg.Pool,
  projectId: string,
  message: { phone: string; type: string; content: unknown },
  ref: string,
  at: Date,
  idempotencyKey?: string,
): Promise<void> {
  await pool.query({
    name: 'record-intent',
    text: `WITH ct AS (
             INSERT INTO contacts (project_id, phone, created_at, updated_at) VALUES ($1, $2, $3, $3)
             ON CONFLICT (project_id, phone) DO UPDATE SET phone = EXCLUDED.phone
             RETURNING id
           ), cv AS (
             INSERT INTO conversations (project_id, contact_id, last_message_at, created_at, updated_at)
             SELECT $1, ct.id, $3, $3, $3 FROM ct
             ON CONFLICT (project_id, contact_id) DO UPDATE
               SET last_message_at = GREATEST(conversations.last_message_at, EXCLUDED.last_message_at), updated_at = EXCLUDED.updated_at
             RETURNING id
           ), ik AS (
             UPDATE idempotency_records SET message_ref = $4 WHERE $7::text IS NOT NULL AND project_id = $1 AND key = $7
           )
           INSERT INTO messages (project_id, conversation_id, wamid, client_ref, direction, type, content, status, sent_at, status_at)
           SELECT $1, cv.id, $4, $4, 'outbound', $5, $6::jsonb, 'pending', $3, $3 FROM cv`,
    values: [projectId, message.phone, at, ref, message.type, JSON.stringify(message.content), idempotencyKey ?? null],
  });
}

/** The channel accepted the send: the message gets its wamid (unless a status already gave it one) and leaves `pending`. */
export async function confirmSent(pool: pg.Pool, projectId: string, ref: string, wamid: string, at: Date): Promise<void> {
  await pool.query({
    name: 'confirm-sent',
    text: `UPDATE messages SET wamid = $3, status = CASE WHEN status = 'pending' THEN 'sent' ELSE status END,
                  status_at = CASE WHEN status = 'pending' THEN $4 ELSE status_at END
           WHERE project_id = $1 AND client_ref = $2`,
    values: [projectId, ref, wamid, at],
  });
}

/**
 * The channel certainly did not send: the pending message goes and its quota unit comes back, in
 * one statement, so the quota can never keep a unit for a send that did not happen.
 */
export async function abandonIntent(pool: pg.Pool, projectId: string, ref: string, day: string): Promise<void> {
  await pool.query({
    name: 'abandon-intent',
    text: `WITH gone AS (DELETE FROM messages WHERE project_id = $1 AND client_ref = $2 AND status = 'pending' RETURNING 1)
           UPDATE send_counters SET count = count - 1
           WHERE project_id = $1 AND day = $3::date AND count > 0 AND EXISTS (SELECT 1 FROM gone)`,
    values: [projectId, ref, day],
  });
}

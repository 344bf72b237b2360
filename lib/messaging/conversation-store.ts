/**
 * Finding and recording contacts, conversations and messages: shared by sending (outbound) and
 * the channel webhook (inbound). Writes happen in one transaction per message.
 */
import type pg from 'pg';
import type { Prisma } from '../../generated/prisma/client.js';
import { MESSAGE_ACTIVITY_SET_SQL } from '../conversations/order.js';

type Tx = Prisma.TransactionClient;

export { windowOpen } from '../conversations/window.js';
import { SERVICE_WINDOW_MS } from '../conversations/window.js';

/**
 * The conversation of a contact (lib/conversations/identity.ts resolves who it is), created when
 * missing, its activity moved to `at`.
 */
export async function upsertConversation(tx: Tx, projectId: string, contactId: bigint, at: Date, opts: { inbound: boolean }) {
  const contact = { id: contactId };
  const existing = await tx.conversation.findUnique({ where: { projectId_contactId: { projectId, contactId: contact.id } } });
  if (!existing) {
    return tx.conversation.create({
      data: { projectId, contactId: contact.id, lastMessageAt: at, lastInboundAt: opts.inbound ? at : null },
      include: { contact: true },
    });
  }
  // Activity only moves forward, so a late or replayed message never pulls a conversation down;
  // the order moves only when another conversation is ahead (lib/conversations/order.ts).
  const lastMessageAt = existing.lastMessageAt > at ? existing.lastMessageAt : at;
  const behind = at > existing.orderAt && (await tx.conversation.findFirst({
    where: { projectId, OR: [{ orderAt: { gt: existing.orderAt } }, { orderAt: existing.orderAt, id: { gt: existing.id } }] },
    select: { id: true },
  })) !== null;
  return tx.conversation.update({
    where: { id: existing.id },
    data: {
      lastMessageAt,
      ...(behind ? { orderAt: lastMessageAt } : {}),
      ...(opts.inbound && (!existing.lastInboundAt || existing.lastInboundAt < at) ? { lastInboundAt: at } : {}),
    },
    include: { contact: true },
  });
}

/**
 * Records a send before the channel is called, in one statement (window check, contact,
 * conversation, message), because it runs for every message: the message is `pending` under our
 * reference `ref` (its wamid until the channel names one), the conversation's activity moves
 * (lib/conversations/order.ts), its state is untouched. A session message whose 24-hour window is
 * closed records nothing and answers `open: false`. An existing contact is only read: an upsert
 * would write a new version of an unchanged row on every send. With an Idempotency-Key, the key
 * is linked to the reference in the same statement, so a crash after this point can never lead
 * the key to send again (middleware/idempotency.ts).
 */
/**
 * Whether a session message to `phone` may be sent now (its 24-hour window is open). Read only on
 * the rare path where the quota is used up, so that a send the window forbids anyway is answered
 * 409 (waiting for the quota's reset would not help it) as before the quota was reserved first.
 */
export async function sessionWindowOpen(pool: pg.Pool, projectId: string, phone: string | null, at: Date, userId?: string | null): Promise<boolean> {
  const { rows } = await pool.query<{ open: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM contacts c JOIN conversations w ON w.project_id = c.project_id AND w.contact_id = c.id
       WHERE c.project_id = $1 AND (c.phone = $2 OR c.user_id = $4)
         AND w.last_inbound_at > $3::timestamptz - interval '${SERVICE_WINDOW_MS} milliseconds'
     ) AS open`,
    [projectId, phone, at, userId ?? null],
  );
  return rows[0].open;
}

export async function recordIntent(
  pool: pg.Pool,
  projectId: string,
  message: { phone: string | null; userId?: string | null; type: string; content: unknown; session?: boolean },
  ref: string,
  at: Date,
  idempotencyKey?: string,
): Promise<{ open: boolean }> {
  // A contact inserted by a concurrent transaction after this statement's snapshot is neither
  // seen nor inserted (ON CONFLICT DO NOTHING), so nothing is recorded: the next try sees it.
  for (let attempt = 1; ; attempt++) {
    const { rows } = await pool.query<{ open: boolean; recorded: number }>({
      name: 'record-intent',
      text: `WITH found AS (
               -- By phone, else by business-scoped user id (lib/conversations/recipient.ts).
               SELECT id FROM contacts WHERE project_id = $1 AND (phone = $2 OR ($2::text IS NULL AND user_id = $9))
             ), gate AS (
               SELECT NOT $8::boolean OR EXISTS (
                 SELECT 1 FROM found JOIN conversations w ON w.project_id = $1 AND w.contact_id = found.id
                 WHERE w.last_inbound_at > $3::timestamptz - interval '${SERVICE_WINDOW_MS} milliseconds'
               ) AS open
             ), created AS (
               INSERT INTO contacts (project_id, phone, user_id, created_at, updated_at)
               SELECT $1, $2, CASE WHEN $2::text IS NULL THEN $9 END, $3, $3 WHERE NOT EXISTS (SELECT 1 FROM found) AND (SELECT open FROM gate)
               ON CONFLICT DO NOTHING
               RETURNING id
             ), ct AS (
               SELECT id FROM found WHERE (SELECT open FROM gate) UNION ALL SELECT id FROM created
             ), cv AS (
               INSERT INTO conversations (project_id, contact_id, last_message_at, created_at, updated_at)
               SELECT $1, ct.id, $3, $3, $3 FROM ct
               ON CONFLICT (project_id, contact_id) DO UPDATE SET ${MESSAGE_ACTIVITY_SET_SQL}
               RETURNING id
             ), ik AS (
               UPDATE idempotency_records SET message_ref = $4
               WHERE $7::text IS NOT NULL AND project_id = $1 AND key = $7 AND message_ref IS DISTINCT FROM $4
                 AND (SELECT open FROM gate)
             ), ins AS (
               INSERT INTO messages (project_id, conversation_id, wamid, client_ref, direction, type, content, status, sent_at, status_at)
               SELECT $1, cv.id, $4, $4, 'outbound', $5, $6::jsonb, 'pending', $3, $3 FROM cv
               RETURNING 1
             )
             SELECT (SELECT open FROM gate) AS open, (SELECT count(*)::int FROM ins) AS recorded`,
      values: [projectId, message.phone, at, ref, message.type, JSON.stringify(message.content), idempotencyKey ?? null, message.session === true, message.userId ?? null],
    });
    if (!rows[0].open) return { open: false };
    if (rows[0].recorded === 1) return { open: true };
    if (attempt >= 3) throw new Error(`recording send ${ref} inserted no message (contact ${message.phone ?? message.userId} raced ${attempt} times)`);
  }
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

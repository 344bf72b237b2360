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
 * Records an accepted send in one statement (contact, conversation, message), because it runs
 * for every message: the conversation moves up the recent-activity order, its state is untouched.
 */
export async function recordOutbound(
  pool: pg.Pool,
  projectId: string,
  message: { phone: string; type: string; content: unknown },
  wamid: string,
  at: Date,
): Promise<void> {
  await pool.query({
    name: 'record-outbound',
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
           )
           INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, sent_at, status_at)
           SELECT $1, cv.id, $4, 'outbound', $5, $6::jsonb, 'sent', $3, $3 FROM cv`,
    values: [projectId, message.phone, at, wamid, message.type, JSON.stringify(message.content)],
  });
}

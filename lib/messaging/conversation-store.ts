/**
 * Finding and recording contacts, conversations and messages: shared by sending (outbound) and
 * the channel webhook (inbound). Writes happen in one transaction per message.
 */
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

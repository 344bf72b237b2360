/**
 * Finding and recording the contact and conversation of an inbound message (the channel webhook);
 * outbound sends record theirs in the send ledger (ledger.ts). Writes happen in one transaction per message.
 */
import type { Prisma } from '../../generated/prisma/client.js';
import { MESSAGE_ACTIVITY_SET_SQL } from '../conversations/order.js';

type Tx = Prisma.TransactionClient;

export { windowOpen } from '../conversations/window.js';

/**
 * The contact and conversation for a phone, created when missing. An existing contact is read,
 * never rewritten (an upsert that changes nothing still writes a new row version).
 */
export async function upsertConversation(tx: Tx, projectId: string, phone: string, at: Date, opts: { inbound: boolean; profileName?: string }) {
  const contact = (await tx.contact.findUnique({ where: { projectId_phone: { projectId, phone } } })) ?? (await tx.contact.upsert({
    where: { projectId_phone: { projectId, phone } },
    create: { projectId, phone, name: opts.profileName ?? null },
    update: {},
  }));
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

/**
 * Finding and recording the contact and conversation of an inbound message (the channel webhook);
 * outbound sends record theirs in the send ledger (ledger.ts). Writes happen in one transaction per message.
 */
import type { Prisma } from '../../generated/prisma/client.js';
import { MESSAGE_ACTIVITY_SET_SQL } from '../conversations/order.js';

type Tx = Prisma.TransactionClient;

export { windowOpen } from '../conversations/window.js';

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

/**
 * Messages in WhatsApp groups (docs/groups.md), through the send ledger like any other:
 * - a participant's message is stored once (keyed by its wamid) in the group's conversation, with
 *   its sender added to the content as `group_sender` ({ phone, user_id, name }: Meta's message
 *   names the sender by `from`, which the stored content leaves out), raises `message.received`
 *   and reaches the bot as a message of a conversation of kind `group`;
 * - a send to a group (POST /v1/messages with `group_id`) goes to the channel with
 *   `recipient_type: group`; interactive messages are refused before the channel is called
 *   (WhatsApp takes none in groups), and a group that is not active is 409 `group_not_active`.
 *   The group's statuses and pricing settle it as they do a one-to-one message.
 * The 24-hour customer-service window does not gate sends to a group (the members joined the
 * business's group by its invite link); the daily quota does.
 */
import type { Deps } from '../deps.js';
import type { OpenChannel } from '../channel-settings/settings.js';
import type { MessageEvent } from '../channel-port/events.js';
import { ApiError } from '../platform/errors.js';
import { groupByChannelId, groupById, groupSummaryView, notActive, type GroupRow } from '../groups/groups.js';
import { upsertConversation } from '../conversations/conversations.js';
import { conversationView, messageView } from '../conversations/views.js';
import { isBsuid } from '../conversations/identity.js';
import { recordEvent } from '../webhooks/events.js';
import { recordInbound } from './ledger.js';
import { inboundText } from './inbound-text.js';
import { inPrismaTransaction } from '../platform/db/transaction.js';
import { isUniqueViolation } from '../platform/db/errors.js';

/** The sender of a group message as stored with it. */
export interface GroupSender {
  phone: string | null;
  user_id: string | null;
  name: string | null;
}

/**
 * A participant wrote in a group: stored once in the group's conversation. False when it was
 * stored before, or names a group this project does not have (confirmed).
 */
export async function applyGroupMessage(deps: Deps, channel: OpenChannel, m: MessageEvent, now: Date): Promise<boolean> {
  const projectId = channel.projectId;
  if (typeof m.channelMessageId !== 'string' || !m.channelMessageId || !m.groupId) return false;
  const group = await groupByChannelId(deps.db.sql, projectId, m.groupId);
  if (!group || group.contactId === null) return false;
  const sender: GroupSender = {
    phone: m.customer.phone ? `+${m.customer.phone}` : null,
    user_id: m.customer.userId && isBsuid(m.customer.userId) ? m.customer.userId : null,
    name: m.customer.profileName ?? null,
  };
  const content: Record<string, unknown> = { ...m.content, group_sender: sender };
  const type = String(m.type ?? 'unknown').slice(0, 32);
  let stored;
  try {
    stored = await inPrismaTransaction(deps.db.prisma, async (tx) => {
      const seen = await tx.message.findUnique({ where: { projectId_wamid: { projectId, wamid: m.channelMessageId } }, select: { id: true } });
      if (seen) return undefined;
      const conversation = await upsertConversation(tx, projectId, group.contactId!, now, { inbound: true });
      const message = await recordInbound(tx, {
        projectId, conversationId: conversation.id, wamid: m.channelMessageId, type, content,
        sentAt: m.timestamp ? new Date(Number(m.timestamp) * 1000) : now, at: now,
      });
      if (deps.bot) await deps.bot.enqueue(tx, projectId, message.id, now);
      const view = { ...conversationView(conversation, now), kind: 'group' as const, group: groupSummaryView(group) };
      await recordEvent(tx, projectId, 'message.received', {
        conversation_id: Number(conversation.id), message: messageView(message, conversation.contact), conversation: view,
      }, now);
      return { conversation, message };
    });
  } catch (e) {
    // Another instance stored the same notification's message first.
    if (isUniqueViolation(e)) return false;
    throw e;
  }
  if (!stored) return false;
  const { conversation, message } = stored;
  deps.bot?.onInboundMessage(projectId, message.id, {
    id: m.channelMessageId, from: m.customer.phone ?? sender.user_id ?? '', type: message.type, text: inboundText(message.type, content), raw: content,
    conversation: { id: Number(conversation.id), state: conversation.state, kind: 'group', group_id: Number(group.id) },
    contact: { phone: m.customer.phone ?? null, user_id: sender.user_id, username: m.customer.username ?? null, name: sender.name },
    received_at: now.toISOString(),
  });
  return true;
}

/** Interactive messages are not for groups (WhatsApp refuses them): refused before anything else. */
export function refuseInGroup(type: unknown): void {
  if (type === 'interactive') {
    throw new ApiError('unsupported_in_group', 'WhatsApp takes no interactive messages (buttons, lists, flows, call permission requests) in groups: send text, media or a template.', {
      fields: [{ field: 'type', message: 'interactive is not sent to groups' }],
    });
  }
}

/** The group a send names: the project's, active (confirmed, neither suspended nor deleted). */
export async function groupForSend(deps: Deps, projectId: string, id: number): Promise<GroupRow & { groupId: string; contactId: bigint }> {
  const g = await groupById(deps.db.sql, projectId, BigInt(id));
  if (!g) throw new ApiError('not_found', `No group ${id} in this project.`);
  if (g.status !== 'active' || !g.groupId || g.contactId === null) throw notActive(g);
  return g as GroupRow & { groupId: string; contactId: bigint };
}

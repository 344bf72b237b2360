/**
 * The WhatsApp Business app beside the API on one number (coexistence), and another app holding a
 * customer's thread: the port's events of both applied to storage (docs/coexistence.md).
 *
 * Policy and why:
 * - An echo (a message the business sent from the Business app) is stored once per wamid as an
 *   outbound message by `business_app`, and the conversation becomes the person's (the `handover`
 *   state, as a dashboard take-over): a person replied, so the bot stays quiet. It does not open
 *   or move the customer's service window (only the customer's messages do). `message.echo` fires.
 * - A history message (the past the number brought when it joined) is stored once per wamid,
 *   marked `history`, never handed to the bot, never moving the window or raising events (a sync
 *   brings thousands; the project reads them with the conversation).
 * - A contact sync names known contacts; a removal in the app deletes nothing here.
 * - A handover notification records who holds the thread (`thread_holder`: null is this app).
 */
import type { Deps } from '../deps.js';
import type { OpenChannel } from '../channel-settings/settings.js';
import type { ContactSyncEvent, HistoryEvent, MessageEchoEvent, ThreadControlChangedEvent } from '../channel-port/events.js';
import { holdForPerson, setThreadHolder, upsertConversation } from '../conversations/conversations.js';
import { isBsuid, resolveContact } from '../conversations/identity.js';
import { syncContactName } from '../conversations/contact-store.js';
import { conversationView, messageView, threadHolderView } from '../conversations/views.js';
import { recordTold } from './ledger.js';
import { recordEvent } from '../webhooks/events.js';
import { inPrismaTransaction, inTransaction } from '../platform/db/transaction.js';
import { queryRows } from '../platform/db/tx.js';

/** History's statuses (Meta's upper-case `history_context.status`) as our delivery statuses. */
const HISTORY_STATUS: Record<string, string> = { delivered: 'delivered', read: 'read', played: 'read', sent: 'sent', pending: 'sent', error: 'failed' };

const sentAtOf = (timestamp: string | undefined, now: Date) => {
  const t = Number(timestamp);
  return Number.isFinite(t) && t > 0 ? new Date(t * 1000) : now;
};

function idsOf(c: { phone?: string; userId?: string }) {
  return { phone: c.phone, userId: c.userId !== undefined && isBsuid(c.userId) ? c.userId : undefined };
}

/** An echo of the Business app: true when stored now (false: seen before, or no customer). */
export async function applyEcho(deps: Deps, channel: OpenChannel, e: MessageEchoEvent, now: Date): Promise<boolean> {
  const ids = idsOf(e.customer);
  if (!e.channelMessageId || (!ids.phone && !ids.userId)) return false;
  return inPrismaTransaction(deps.db.prisma, async (tx) => {
    const seen = await tx.message.findUnique({ where: { projectId_wamid: { projectId: channel.projectId, wamid: e.channelMessageId } }, select: { id: true } });
    if (seen) return false;
    const contact = (await resolveContact(tx, channel.projectId, ids, now, deps.contactMerge))!;
    // inbound: false: the window is the customer's, an echo leaves it as it was.
    const conversation = await upsertConversation(tx, channel.projectId, contact.id, now, { inbound: false });
    const message = await recordTold(tx, {
      projectId: channel.projectId, conversationId: conversation.id, wamid: e.channelMessageId, direction: 'outbound', type: e.type.slice(0, 32),
      content: e.content, status: 'sent', history: false, sentAt: sentAtOf(e.timestamp, now), at: now,
    });
    if (!message) return false;
    const held = await holdForPerson(tx, conversation.id, now);
    await recordEvent(tx, channel.projectId, 'message.echo', {
      conversation_id: Number(conversation.id),
      message: messageView(message, contact),
      conversation: conversationView({ ...conversation, state: held.state }, now),
      previous_state: held.previousState,
    }, now);
    return true;
  });
}

/** One message of the history sync: true when stored now. */
export async function applyHistory(deps: Deps, channel: OpenChannel, e: HistoryEvent, now: Date): Promise<boolean> {
  const ids = idsOf(e.customer);
  if (!e.channelMessageId || (!ids.phone && !ids.userId)) return false;
  const sentAt = sentAtOf(e.timestamp, now);
  return inPrismaTransaction(deps.db.prisma, async (tx) => {
    const seen = await tx.message.findUnique({ where: { projectId_wamid: { projectId: channel.projectId, wamid: e.channelMessageId } }, select: { id: true } });
    if (seen) return false;
    const contact = (await resolveContact(tx, channel.projectId, ids, now, deps.contactMerge))!;
    // At the message's own time, so a past message never moves a conversation ahead of newer ones.
    const conversation = await upsertConversation(tx, channel.projectId, contact.id, sentAt, { inbound: false });
    const status = e.direction === 'inbound' ? 'received' : (HISTORY_STATUS[e.status ?? ''] ?? 'sent');
    const message = await recordTold(tx, {
      projectId: channel.projectId, conversationId: conversation.id, wamid: e.channelMessageId, direction: e.direction, type: e.type.slice(0, 32),
      content: e.content, status, history: true, sentAt, at: now,
    });
    return message !== undefined;
  });
}

/** The Business app's contacts: names for the known ones. */
export async function applyContactSync(deps: Deps, channel: OpenChannel, e: ContactSyncEvent, now: Date): Promise<boolean> {
  const name = e.fullName ?? e.firstName;
  if (e.action === 'remove' || !name || !e.customer.phone) return false;
  return syncContactName(deps.db.sql, channel.projectId, e.customer.phone, name, now);
}

/** The customer's conversation, by phone or BSUID. */
async function conversationOf(deps: Deps, projectId: string, c: { phone?: string; userId?: string }): Promise<bigint | undefined> {
  const rows = await queryRows<{ id: string }>(
    deps.db.sql,
    `SELECT v.id::text FROM conversations v JOIN contacts ct ON ct.id = v.contact_id
     WHERE v.project_id = $1 AND (ct.phone = $2 OR ct.user_id = $3) ORDER BY v.id LIMIT 1`,
    projectId, c.phone ?? null, c.userId ?? null,
  );
  return rows[0] ? BigInt(rows[0].id) : undefined;
}

/**
 * The holder a thread control action leaves: `pass` gives it to the target app, `take` and
 * `release` leave it with the number's primary app, this one (null). An app id that is ours is us.
 */
export function holderAfter(action: 'pass' | 'take' | 'release', targetAppId: string | undefined, ourAppId: string | undefined, takenBy?: string): string | null {
  const app = action === 'pass' ? targetAppId : takenBy;
  return !app || app === ourAppId ? null : app;
}

/** Another app passed, took or released a thread (Meta's handover notification). */
export async function applyThreadControlChange(deps: Deps, channel: OpenChannel, e: ThreadControlChangedEvent, now: Date): Promise<boolean> {
  const id = await conversationOf(deps, channel.projectId, idsOf(e.customer));
  if (id === undefined) return false;
  const holder = holderAfter(e.action, e.newOwnerAppId, channel.appId, e.action === 'take' ? e.newOwnerAppId : undefined);
  return recordThreadHolder(deps, channel.projectId, id, holder, e.action, 'channel', now);
}

/** Records the holder and raises `conversation.thread_control` when it changed. */
export async function recordThreadHolder(deps: Pick<Deps, 'db'>, projectId: string, id: bigint, holder: string | null, action: string, by: 'api' | 'dashboard' | 'channel', now: Date): Promise<boolean> {
  return inTransaction(deps.db.pool, async (client) => {
    const changed = await setThreadHolder(client, projectId, id, holder, now);
    if (!changed) return false;
    if (changed.previous !== holder) {
      await recordEvent(client, projectId, 'conversation.thread_control', {
        conversation_id: Number(id), action, by, holder: threadHolderView(holder, changed.since), previous_holder_app_id: changed.previous,
      }, now);
    }
    return true;
  });
}

/**
 * What the channel tells us (the port's events, lib/channel-port/events.ts), applied to storage.
 * An inbound message creates or updates the contact and conversation, is stored once (keyed by the
 * channel's message id, the `wamid` column, so the provider's retries are harmless),
 * opens the 24-hour window and raises `message.received`. A status update attaches to its message
 * by wamid and only moves forward (sent → delivered → read; failed keeps the provider's error),
 * raising `message.status`. A template decision updates the template and raises
 * `template.approved` or `template.rejected`. Each change and its event commit together.
 */
import { refreshChannelThroughput } from '../channel-settings/throughput.js';
import { storeAnnouncedLimit } from '../pricing/messaging-limit.js';
import { applyTemplateStatus } from '../templates/templates.js';
import { inPrismaTransaction, retryDeadlock } from '../platform/db/transaction.js';
import { queryRowsNamed } from '../platform/db/tx.js';
import type { Deps } from '../deps.js';
import type { OpenChannel } from '../channel-settings/settings.js';
import { dispatchedAtSql, EVENTS_CHANNEL, insertEventsSql, recordEvent } from '../webhooks/events.js';
import { STATUS_RANK } from './status-rank.js';
import { recordInbound, statusMovesSql } from './ledger.js';
import { newId } from '../platform/secrets.js';
import { conversationView, messageView } from '../conversations/views.js';
import { upsertConversation } from '../conversations/conversations.js';
import type { ChannelEvent, ChannelEventKind, Customer, MessageEvent, StatusEvent } from '../channel-port/events.js';
import { isBsuid, rekeyContact, resolveContact } from '../conversations/identity.js';
import { applyUserPreferences, fillStatusCustomers, keywordConsent, optOutOnFailedStatuses, statusCustomerIds } from '../consent/signals.js';
import { sendConsentConfirmation } from './consent-confirmation.js';
import { inboundText } from './inbound-text.js';
import { boundEvent } from './inbound-bounds.js';
import { flowReplyOf } from '../flows/send.js';
import { pricingOf } from '../pricing/status-pricing.js';
import { storeReturningCustomerMessage } from './inbound-statement.js';
import { applyCallEvent, applyCallPermission } from '../calls/calls.js';
import { applyContactSync, applyEcho, applyHistory, applyThreadControlChange } from './coexistence.js';
import { applyGroupMessage } from './group-messages.js';
import { autoAssign, autoAssignOn } from '../inbox/auto-assign.js';
import { applyGroupEvent } from '../groups/groups.js';
import { portOf } from '../channel-port/capabilities.js';

export { STATUS_RANK } from './status-rank.js';

/** A status for an unknown wamid this recent may precede our own record of the send: retry later. */
const UNKNOWN_STATUS_GRACE_MS = 5 * 60 * 1000;

export interface WebhookOutcome {
  messages: number;
  statuses: number;
  templates: number;
  /** Something could not be applied yet; answer non-2xx so the provider retries. */
  retryLater: boolean;
}

/**
 * `standby`: the customer wrote while another app holds the thread (docs/coexistence.md): stored
 * and raised as any message, the bot not handed it.
 */
async function applyMessage(deps: Deps, channel: OpenChannel, m: MessageEvent, now: Date, opts: { standby?: boolean } = {}): Promise<boolean> {
  // A customer with a username may come with a BSUID and no phone: known either way.
  const ids: Customer = { ...m.customer };
  if (ids.userId !== undefined && !isBsuid(ids.userId)) delete ids.userId;
  if (typeof m.channelMessageId !== 'string' || !m.channelMessageId || (!ids.phone && !ids.userId)) return false;
  // The content is stored as it came; a flow's reply is added to this copy.
  const rest: Record<string, unknown> = { ...m.content };
  // A returning customer's message is one statement; any other case (and a standby one) runs the transaction.
  const fast = opts.standby ? undefined : await storeReturningCustomerMessage(deps.db.sql, {
    projectId: channel.projectId, message: m, ids, content: rest, now, bot: deps.bot ? { leaseMs: deps.config.botInboxLeaseMs, enqueueSql: (rows) => deps.bot!.enqueueSql(rows) } : undefined,
  });
  if (fast === 'not stored') return false;
  const stored = fast ? { ...fast.stored, consent: undefined } : await storeInTransaction(deps, channel, m, ids, rest, now, !opts.standby);
  if (!stored) return false;
  if (stored.consent?.confirmation) {
    const to = stored.contact.phone ? { phone: `+${stored.contact.phone}` } : { user_id: stored.contact.userId! };
    await sendConsentConfirmation(deps, channel.projectId, to, stored.consent.confirmation);
  }
  // The project's deployed bot handles the message once it is stored and `message.received` raised.
  const { contact } = stored;
  if (opts.standby) return true;
  // A waiting customer in an unassigned conversation goes to the next available person (when the project turned it on).
  if (stored.autoAssign) await autoAssign(deps.db, channel.projectId, BigInt(stored.conversation.id), now);
  deps.bot?.onInboundMessage(channel.projectId, stored.message.id, {
    id: m.channelMessageId, from: contact.phone ?? contact.userId!, type: stored.message.type, text: inboundText(stored.message.type, rest as Record<string, unknown>), raw: rest as Record<string, unknown>,
    conversation: { id: Number(stored.conversation.id), state: stored.conversation.state, kind: 'individual' },
    contact: { phone: contact.phone, user_id: contact.userId, username: contact.username, name: contact.name ?? null }, received_at: now.toISOString(),
    consent: stored.consent ? { change: stored.consent.status, keyword: stored.consent.keyword } : null,
  });
  return true;
}

/**
 * Any inbound message, in one transaction: a BSUID change, a new or merged contact, ids to fill
 * in, a flow's reply, a consent keyword (the one statement's fast path leaves these here).
 * False when the wamid was stored before.
 */
async function storeInTransaction(deps: Deps, channel: OpenChannel, m: MessageEvent, ids: Customer, rest: Record<string, unknown>, now: Date, forBot = true) {
  return inPrismaTransaction(deps.db.prisma, async (tx) => {
    const seen = await tx.message.findUnique({ where: { projectId_wamid: { projectId: channel.projectId, wamid: m.channelMessageId } }, select: { id: true } });
    if (seen) return false;
    // Meta's BSUID change (a system message from the old id naming the new one): re-key first,
    // so the message lands on the same contact under its new id. A replay finds nothing to move.
    const newUserId = bsuidChangeOf(m);
    if (newUserId && ids.userId && newUserId !== ids.userId) {
      await rekeyContact(tx, channel.projectId, ids.userId, newUserId, now, deps.contactMerge);
      ids.userId = newUserId;
    }
    const contact = (await resolveContact(tx, channel.projectId, ids, now, deps.contactMerge))!;
    // The window runs from when we received the message: our clock, not the provider's.
    const conversation = await upsertConversation(tx, channel.projectId, contact.id, now, { inbound: true });
    const flowReply = await flowReplyOf(tx, channel.projectId, m.content);
    if (flowReply) rest.flow_reply = flowReply;
    const type = String(m.type ?? 'unknown').slice(0, 32);
    const message = await recordInbound(tx, {
      projectId: channel.projectId,
      conversationId: conversation.id,
      wamid: m.channelMessageId,
      type,
      content: rest,
      sentAt: m.timestamp ? new Date(Number(m.timestamp) * 1000) : now,
      at: now,
    });
    // A consent keyword (the whole message) changes the contact's marketing consent with it.
    const consent = await keywordConsent(tx, channel.projectId, contact.id, type, rest, now);
    const autoAssign = conversation.assigneeId === null && (await autoAssignOn(tx, channel.projectId));
    // The bot's part commits with the message: a restart before the bot ran cannot drop it.
    if (deps.bot && forBot) await deps.bot.enqueue(tx, channel.projectId, message.id, now);
    await recordEvent(tx, channel.projectId, 'message.received', {
      conversation_id: Number(conversation.id),
      message: messageView(message, contact),
      conversation: conversationView(conversation, now),
    }, now);
    return { conversation, message, contact, consent, autoAssign };
  });
}

/** The new BSUID a system message announces (Meta's user id change), if it is one. */
function bsuidChangeOf(m: MessageEvent): string | undefined {
  if (m.type !== 'system') return undefined;
  const sys = m.content.system as { type?: unknown; user_id?: unknown; new_user_id?: unknown } | undefined;
  if (sys?.type !== 'user_changed_user_id') return undefined;
  const next = sys.user_id ?? sys.new_user_id;
  return isBsuid(next) ? next : undefined;
}

/**
 * Applies one notification's statuses in one statement per round: each forward move, its
 * `message.status` event and the dispatcher's wake-up commit together. Statuses arrive three or
 * more per message, often several per notification, so this stays one round trip for all of them.
 * A notification naming one wamid twice is applied in rounds, in the order given, so each status
 * is judged against the one before it. Returns, per status, whether its message is known (an
 * unknown one may not be recorded yet).
 * What the statuses say about the recipient (BSUID, phone, username) is filled in first, so the
 * events carry it: the first round's statement checks whether any of it is news to the contact
 * and, when it is, writes nothing; the contacts are then filled in (fillStatusCustomers) and the
 * rounds run again without the check. Mostly nothing is news: one statement.
 */
async function applyStatuses(deps: Deps, channel: OpenChannel, statuses: StatusEvent[], now: Date): Promise<boolean[]> {
  // Statuses we do not track (e.g. "deleted") and malformed ones are acknowledged as known.
  const known = statuses.map(() => true);
  // Within one notification, only a forward move of a wamid can change anything: a status not
  // above an earlier one for the same wamid shares that one's outcome. So a wamid takes at most
  // one round per rank (4), however long the notification.
  const rounds: Array<Array<{ s: StatusEvent; i: number }>> = [];
  const latest = new Map<string, { rank: number; i: number; round: number }>();
  const sameAs: Array<[number, number]> = [];
  statuses.forEach((s, i) => {
    const id = s.channelMessageId;
    if (!id || id.length > 256 || !Object.hasOwn(STATUS_RANK, s.status)) return;
    const rank = STATUS_RANK[s.status];
    const before = latest.get(id);
    if (before && rank <= before.rank) {
      sameAs.push([i, before.i]);
      return;
    }
    const round = before ? before.round + 1 : 0;
    latest.set(id, { rank, i, round });
    (rounds[round] ??= []).push({ s, i });
  });
  let check = statusCustomerIds(statuses);
  if (check.wamid.length && !rounds.length) {
    await fillStatusCustomers(deps.db, deps.contactMerge, channel.projectId, statuses, now);
  }
  for (let r = 0; r < rounds.length; r++) {
    const round = rounds[r];
    const { known: rows, news } = await applyStatusRound(deps, channel.projectId, round.map(({ s }) => s), now, check);
    if (news) {
      await fillStatusCustomers(deps.db, deps.contactMerge, channel.projectId, statuses, now);
      check = NO_CHECK;
      r--;
      continue;
    }
    check = NO_CHECK;
    round.forEach(({ i }, k) => (known[i] = rows[k]));
  }
  for (const [i, earlier] of sameAs) known[i] = known[earlier];
  return known;
}

/** No check of the recipients' ids (done, or nothing to check). */
const NO_CHECK: ReturnType<typeof statusCustomerIds> = { wamid: [], phone: [], userId: [], username: [] };

/**
 * One round of statuses in one statement. `check`: the recipients' ids the statuses give; when
 * any is news to its message's contact, nothing is written and `news` is true.
 */
async function applyStatusRound(
  deps: Deps, projectId: string, statuses: StatusEvent[], now: Date, check: ReturnType<typeof statusCustomerIds>,
): Promise<{ known: boolean[]; news: boolean }> {
  const errors = statuses.map((s) => (s.status === 'failed' ? JSON.stringify(s.errors?.[0] ?? { message: 'failed without detail' }) : null));
  const rows = await retryDeadlock(() =>
    queryRowsNamed<{ ord: number; known: boolean; news: boolean }>(
      deps.db.sql,
      'apply-statuses',
      `WITH input AS (
               SELECT * FROM unnest($2::text[], $3::text[], $4::int[], $5::jsonb[], $6::text[], $9::text[], $10::jsonb[]) WITH ORDINALITY
                 AS i(wamid, status, rank, error, event_id, ref, pricing, ord)
             ), news AS (
               -- What the statuses say of a recipient that its contact lacks (or another username).
               SELECT 1 FROM unnest($11::text[], $12::text[], $13::text[], $14::text[]) AS c(wamid, phone, user_id, username)
                 JOIN messages m ON m.project_id = $1 AND m.wamid = c.wamid
                 JOIN conversations cv ON cv.id = m.conversation_id JOIN contacts ct ON ct.id = cv.contact_id
               WHERE (c.user_id IS NOT NULL AND ct.user_id IS NULL) OR (c.phone IS NOT NULL AND ct.phone IS NULL)
                  OR (c.username IS NOT NULL AND c.username IS DISTINCT FROM ct.username)
               LIMIT 1
             ), gated AS (
               SELECT * FROM input WHERE NOT EXISTS (SELECT 1 FROM news)
             ), upd AS (
               ${statusMovesSql('gated', '$1', '$7')}
             ), ev AS (
               ${insertEventsSql(`SELECT upd.event_id, $1, 'message.status',
                      jsonb_build_object('message_id', upd.wamid, 'id', upd.id, 'conversation_id', upd.conversation_id, 'status', upd.status,
                                         'phone', CASE WHEN ct.phone IS NULL THEN NULL ELSE '+' || ct.phone END,
                                         'user_id', ct.user_id, 'username', ct.username)
                        || CASE WHEN upd.error IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('error', upd.error) END
                        || CASE WHEN upd.pricing IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('pricing', upd.pricing) END,
                      $7, ${dispatchedAtSql('$1', `'message.status'`, '$7')}
               FROM upd LEFT JOIN conversations cv ON cv.id = upd.conversation_id LEFT JOIN contacts ct ON ct.id = cv.contact_id
               ORDER BY upd.ord`)}
               RETURNING project_id, dispatched_at
             )
             SELECT i.ord::int AS ord,
                    EXISTS (SELECT 1 FROM upd WHERE upd.ord = i.ord)
                      OR EXISTS (SELECT 1 FROM messages WHERE project_id = $1 AND wamid = i.wamid) AS known,
                    (SELECT pg_notify($8, project_id) FROM ev WHERE dispatched_at IS NULL LIMIT 1) IS NULL AS quiet,
                    EXISTS (SELECT 1 FROM news) AS news
             FROM input i ORDER BY i.ord`,
      projectId,
      statuses.map((s) => s.channelMessageId),
      statuses.map((s) => s.status),
      statuses.map((s) => STATUS_RANK[s.status]),
      errors,
      statuses.map(() => newId('evt', 20)),
      now,
      EVENTS_CHANNEL,
      statuses.map((s) => (s.reference?.startsWith('snd_') ? s.reference : null)),
      statuses.map((s) => {
        const pricing = pricingOf(s);
        return pricing ? JSON.stringify(pricing) : null;
      }),
      check.wamid,
      check.phone,
      check.userId,
      check.username,
    ),
  );
  return { known: rows.map((r) => r.known), news: rows.some((r) => r.news) };
}

/** One notification the channel posted: its events (the adapter reads them), applied. */
export async function applyWebhook(deps: Deps, channel: OpenChannel, payload: unknown): Promise<WebhookOutcome> {
  return applyChannelEvents(deps, channel, portOf(deps, channel).parseNotification(payload, channel.phoneNumberId));
}

/** What an event's handler works with: the channel, the moment and the notification's outcome so far. */
interface Applying {
  deps: Deps;
  channel: OpenChannel;
  now: Date;
  outcome: WebhookOutcome;
}

/**
 * One handler per kind of channel event. The type is exhaustive: a kind added to ChannelEvent that
 * nothing here handles fails the type check instead of being dropped in silence.
 */
const EVENT_HANDLERS: { [K in ChannelEventKind]: (a: Applying, event: Extract<ChannelEvent, { kind: K }>) => Promise<unknown> } = {
  message: async (a, event) => {
    // A participant wrote in a group: the group's conversation (docs/groups.md).
    const stored = event.groupId ? await applyGroupMessage(a.deps, a.channel, event, a.now) : await applyMessage(a.deps, a.channel, event, a.now);
    if (stored) a.outcome.messages++;
  },
  status: (a, event) => applyStatusRun(a, [event]),
  user_preference: (a, event) => applyUserPreferences(a.deps.db, a.deps.contactMerge, a.channel.projectId, [event], a.now),
  messaging_limit: (a, event) => storeAnnouncedLimit(a.deps.db.sql, a.channel.wabaId, event.limit, a.now),
  // Read the level now: campaigns on the number follow it at their next take (pacing.ts).
  throughput: (a, event) => refreshChannelThroughput(a.deps, a.channel.projectId, event.why),
  template_status: async (a, event) => {
    if (await applyTemplateStatus(a.deps, a.channel.projectId, event, a.now)) a.outcome.templates++;
  },
  // A call's change is stored once, with its event (docs/calls.md).
  call: (a, event) => applyCallEvent(a.deps, a.channel, event, a.now),
  call_permission: (a, event) => applyCallPermission(a.deps, a.channel, event, a.now),
  standby_message: async (a, event) => {
    if (await applyMessage(a.deps, a.channel, { ...event, kind: 'message' }, a.now, { standby: true })) a.outcome.messages++;
  },
  message_echo: async (a, event) => {
    if (await applyEcho(a.deps, a.channel, event, a.now)) a.outcome.messages++;
  },
  history: async (a, event) => {
    if (await applyHistory(a.deps, a.channel, event, a.now)) a.outcome.messages++;
  },
  contact_sync: (a, event) => applyContactSync(a.deps, a.channel, event, a.now),
  thread_control_changed: (a, event) => applyThreadControlChange(a.deps, a.channel, event, a.now),
  // A group's change is stored once, with its event (docs/groups.md).
  group_lifecycle: (a, event) => applyGroupEvent(a.deps, a.channel, event, a.now),
  group_participants: (a, event) => applyGroupEvent(a.deps, a.channel, event, a.now),
  group_settings: (a, event) => applyGroupEvent(a.deps, a.channel, event, a.now),
  group_status: (a, event) => applyGroupEvent(a.deps, a.channel, event, a.now),
};

/** Statuses that came together (one notification's), applied together. */
async function applyStatusRun(a: Applying, statuses: StatusEvent[]): Promise<void> {
  // What statuses say about the recipient (BSUID, phone, username) is filled in first, so the
  // `message.status` events carry it (applyStatuses); a failed marketing send to a user who
  // stopped marketing opts out.
  const known = await applyStatuses(a.deps, a.channel, statuses, a.now);
  statuses.forEach((s, k) => {
    if (known[k]) a.outcome.statuses++;
    // `sent` is the state a send is recorded in, so an early `sent` loses nothing.
    else if (s.status === 'sent') return;
    else if (!s.timestamp || a.now.getTime() - Number(s.timestamp) * 1000 < UNKNOWN_STATUS_GRACE_MS) a.outcome.retryLater = true;
  });
  await optOutOnFailedStatuses(a.deps.db.sql, a.channel.projectId, statuses, a.now);
}

/**
 * The domain's inbound entry point: the channel's events, in order (EVENT_HANDLERS). The statuses
 * that come together (one notification's) are applied together, in one statement per round.
 */
export async function applyChannelEvents(deps: Deps, channel: OpenChannel, received: readonly ChannelEvent[]): Promise<WebhookOutcome> {
  // Every field within the API's bounds before anything is stored (./inbound-bounds.ts).
  const events = received.map(boundEvent);
  const a: Applying = { deps, channel, now: deps.clock.now(), outcome: { messages: 0, statuses: 0, templates: 0, retryLater: false } };
  for (let i = 0; i < events.length; i++) {
    const event = events[i];
    if (event.kind === 'status') {
      const statuses: StatusEvent[] = [event];
      while (events[i + 1]?.kind === 'status') statuses.push(events[++i] as StatusEvent);
      await applyStatusRun(a, statuses);
    } else {
      await (EVENT_HANDLERS[event.kind] as (a: Applying, e: ChannelEvent) => Promise<unknown>)(a, event);
    }
  }
  return a.outcome;
}

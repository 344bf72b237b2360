/**
 * The dashboard's look at a project's customers, through the API's own reads and paging
 * (lib/conversations/*, lib/platform/keyset-page.ts): contacts (newest first, keyset by id as
 * `GET /v1/contacts`) and conversations (recent activity, keyset as `GET /v1/conversations`), each
 * with the console's search (name, username, BSUID, phone) and filters (needs a reply, unread), and
 * one conversation with its messages in the contract's shape (`messageView`), newest first, keyset
 * by id as `GET /v1/conversations/{id}/messages`. Always scoped by the project.
 */
import type { Deps } from '../deps.js';
import { queryRows } from '../platform/db/tx.js';
import { DashboardRefusal } from '../accounts/refusal.js';
import { ApiError } from '../platform/errors.js';
import { cursorScope, cursorSecretOf } from '../platform/cursor.js';
import { keysetPage, positions } from '../platform/keyset-page.js';
import { findContactRow, listContactRows, type ContactFilters, type ConversationCondition } from '../conversations/contacts.js';
import { CONVERSATION_CONDITIONS } from '../conversations/console-filters.js';
import {
  findConversationRow,
  listConversationRows,
  listMessageRows,
  markConversationSeen,
  conversationConditionSql,
  conversationPosition,
  type ConversationFilters,
} from '../conversations/conversations.js';
import { waitingSinceSql } from '../conversations/queue.js';
import { contactView, conversationView, messageView, type ContactView, type ConversationView, type MessageRow, type MessageView } from '../conversations/views.js';
import { listCalls, type CallView } from '../calls/calls.js';

type ReadDeps = Pick<Deps, 'db' | 'clock' | 'cursorSecret'>;
export const CUSTOMER_PAGE = 25;

export interface CustomerQuery {
  /** Search text (at most 100 characters are used). */
  q: string;
  /** A condition, or `all` (none); absent: the page's default (the inbox: needs_reply; the contacts: none). */
  filter?: ConversationCondition | 'all';
  cursor?: string;
  /** The inbox's split by assignment: the person's own, nobody's (absent: all). */
  assigned?: 'mine' | 'none';
  /** The inbox's label filter (lower case). */
  label?: string;
}

/** The query string's search and filter, bounded; anything else is no filter. */
export function customerQuery(query: Record<string, unknown>): CustomerQuery {
  const q = typeof query.q === 'string' ? query.q.trim().slice(0, 100) : '';
  const filter = query.filter === 'all' || (CONVERSATION_CONDITIONS as readonly unknown[]).includes(query.filter) ? (query.filter as CustomerQuery['filter']) : undefined;
  const cursor = typeof query.cursor === 'string' && query.cursor ? query.cursor : undefined;
  const assigned = query.assigned === 'mine' || query.assigned === 'none' ? query.assigned : undefined;
  const label = typeof query.label === 'string' && /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,39}$/.test(query.label.trim()) ? query.label.trim().toLowerCase() : undefined;
  return { q, filter, cursor, assigned, label };
}

/** What the person may not be shown a page for: a cursor of another list or search is a 400 page. */
function refusedCursor(e: unknown): never {
  if (e instanceof ApiError && e.code === 'invalid_cursor') {
    throw new DashboardRefusal(400, 'This page link is out of date (the search or filter changed). Start again from the first page.');
  }
  throw e;
}

interface Marks {
  id: number;
  needs_reply: boolean;
  unread: boolean;
  /** The customer's messages after a person last opened it (at most UNREAD_COUNTED). */
  unread_count: number;
  /** Since when the customer waits for a person (lib/conversations/queue.ts); null when nobody waits. */
  waiting_since: string | null;
}

/** Unread messages counted per conversation at most (the list then says "100+ unread"). */
export const UNREAD_COUNTED = 100;

/** Whether each conversation (by its id or its contact's) needs a reply, since when, and is unread (how many messages), in one statement. */
async function marksOf(deps: ReadDeps, projectId: string, by: 'id' | 'contact_id', ids: string[]): Promise<Map<string, Marks>> {
  const out = new Map<string, Marks>();
  if (!ids.length) return out;
  // The unread count reads the conversation's newest messages through (conversation_id, id), at most UNREAD_COUNTED of them.
  const rows = await queryRows<{ key: string; id: string; needs_reply: boolean; unread: boolean; unread_count: number; waiting_since: Date | null }>(
    deps.db.sql,
    `SELECT v.${by}::text AS key, v.id::text, ${conversationConditionSql('v', 'needs_reply', '$3')} AS needs_reply, ${conversationConditionSql('v', 'unread', '$3')} AS unread,
            CASE WHEN ${conversationConditionSql('v', 'unread', '$3')} THEN (SELECT count(*)::int FROM (SELECT 1 FROM messages m WHERE m.conversation_id = v.id AND m.direction = 'inbound' AND NOT m.history
                 AND m.sent_at > COALESCE(v.seen_at, '-infinity'::timestamptz) ORDER BY m.id DESC LIMIT ${UNREAD_COUNTED}) u) ELSE 0 END AS unread_count,
            CASE WHEN ${conversationConditionSql('v', 'needs_reply', '$3')} THEN ${waitingSinceSql('v')} END AS waiting_since
     FROM conversations v WHERE v.project_id = $1 AND v.${by} = ANY($2::bigint[])`,
    projectId, ids, deps.clock.now(),
  );
  for (const r of rows) out.set(r.key, { id: Number(r.id), needs_reply: r.needs_reply, unread: r.unread, unread_count: r.unread_count, waiting_since: r.waiting_since ? r.waiting_since.toISOString() : null });
  return out;
}

export interface ContactListItem extends ContactView {
  conversation: Marks | null;
}

export async function contactsPage(deps: ReadDeps, projectId: string, query: CustomerQuery): Promise<{ contacts: ContactListItem[]; nextCursor: string | null }> {
  const filters: ContactFilters = { search: query.q || undefined, conversation: query.filter === 'all' ? undefined : query.filter, now: deps.clock.now() };
  const { page, nextCursor } = await keysetPage({ cursor: query.cursor, limit: CUSTOMER_PAGE }, {
    scope: cursorScope('dashboardContacts', projectId, { q: query.q, filter: query.filter }),
    secret: cursorSecretOf(deps),
    decode: positions.id,
    read: (afterId, take) => listContactRows(deps.db.sql, projectId, filters, afterId, take),
    encode: (r) => [String(r.id)],
  }).catch(refusedCursor);
  const conversations = await marksOf(deps, projectId, 'contact_id', page.map((r) => String(r.id)));
  return { contacts: page.map((r) => ({ ...contactView(r), conversation: conversations.get(String(r.id)) ?? null })), nextCursor };
}

export interface ConversationListItem extends ConversationView {
  needs_reply: boolean;
  unread: boolean;
  unread_count: number;
  waiting_since: string | null;
  /** The newest message, in words (the list's preview line); null without messages. */
  preview: { direction: string; text: string } | null;
  /** The newest call when it asks for attention: ringing or being answered now, or the customer's missed call. */
  call: 'ringing' | 'in_progress' | 'missed' | null;
}

/** Each conversation's newest call, when it is ringing, under way, or the customer's and missed (the list's call marker). */
async function callMarksOf(deps: ReadDeps, projectId: string, ids: string[]): Promise<Map<string, ConversationListItem['call']>> {
  const out = new Map<string, ConversationListItem['call']>();
  if (!ids.length) return out;
  const rows = await queryRows<{ key: string; status: string; direction: string }>(
    deps.db.sql,
    `SELECT v.id::text AS key, k.status, k.direction FROM conversations v
       CROSS JOIN LATERAL (SELECT status, direction FROM calls k WHERE k.conversation_id = v.id ORDER BY k.id DESC LIMIT 1) k
      WHERE v.project_id = $1 AND v.id = ANY($2::bigint[])`,
    projectId, ids,
  );
  for (const r of rows) {
    if (r.status === 'ringing' || r.status === 'dialing') out.set(r.key, 'ringing');
    else if (r.status === 'pre_accepted' || r.status === 'accepted') out.set(r.key, 'in_progress');
    else if (r.status === 'missed' && r.direction === 'user_initiated') out.set(r.key, 'missed');
  }
  return out;
}

/** Longest preview line of the list. */
const PREVIEW_CHARS = 90;

/** The newest message of each conversation by its own time, in words, one statement (a probe of `(conversation_id, sent_at DESC, id DESC)` each). */
async function previewsOf(deps: ReadDeps, projectId: string, ids: string[]): Promise<Map<string, { direction: string; text: string }>> {
  const out = new Map<string, { direction: string; text: string }>();
  if (!ids.length) return out;
  const rows = await queryRows<MessageRow & { key: string }>(
    deps.db.sql,
    `SELECT v.id::text AS key, m.id::text AS id, m.wamid, m.conversation_id::text AS "conversationId", m.direction, m.type, m.content,
            m.status, m.error, m.sent_at AS "sentAt", m.status_at AS "statusAt"
       FROM conversations v
       CROSS JOIN LATERAL (SELECT * FROM messages m WHERE m.conversation_id = v.id AND m.status <> 'pending' ORDER BY m.sent_at DESC, m.id DESC LIMIT 1) m
      WHERE v.project_id = $1 AND v.id = ANY($2::bigint[])`,
    projectId, ids,
  );
  for (const r of rows) {
    const view = messageView(r);
    const text = messageText(view) ?? (view.type === 'text' ? '' : view.type);
    out.set(r.key, { direction: r.direction, text: [...text].length > PREVIEW_CHARS ? `${[...text].slice(0, PREVIEW_CHARS - 1).join('')}…` : text });
  }
  return out;
}

/**
 * How many conversations wait for a person (the tab's title), counted up to `cap` (the title says
 * "99+" past it): a bounded read however many conversations the project has.
 */
export async function waitingCount(deps: ReadDeps, projectId: string, cap = 100): Promise<number> {
  const rows = await queryRows<{ n: number }>(
    deps.db.sql,
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM conversations v WHERE v.project_id = $1 AND ${conversationConditionSql('v', 'needs_reply', '$2')} LIMIT $3) w`,
    projectId, deps.clock.now(), cap,
  );
  return rows[0].n;
}

/** How many open conversations have a customer's message nobody has opened since (the tab's unread count, capped as waitingCount). */
export async function unreadCount(deps: ReadDeps, projectId: string, cap = 100): Promise<number> {
  const rows = await queryRows<{ n: number }>(
    deps.db.sql,
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM conversations v WHERE v.project_id = $1 AND ${conversationConditionSql('v', 'unread', () => '$3')} LIMIT $2) w`,
    projectId, cap,
  );
  return rows[0].n;
}

/** The inbox's view when none is chosen (issue 68): what needs a person comes first. */
export const INBOX_DEFAULT_VIEW = 'needs_reply';

export async function conversationsPage(deps: ReadDeps, projectId: string, query: CustomerQuery, accountId?: string): Promise<{ conversations: ConversationListItem[]; nextCursor: string | null }> {
  const view = query.filter ?? INBOX_DEFAULT_VIEW;
  const filters: ConversationFilters = { search: query.q || undefined, searchMessages: true, condition: view === 'all' ? undefined : view, label: query.label, now: deps.clock.now() };
  if (query.assigned === 'none') filters.assignee = null;
  else if (query.assigned === 'mine' && accountId) filters.assignee = { accountId };
  const { page, nextCursor } = await keysetPage({ cursor: query.cursor, limit: CUSTOMER_PAGE }, {
    scope: cursorScope('dashboardConversations', projectId, { q: query.q, filter: view, assigned: query.assigned, label: query.label, who: query.assigned === 'mine' ? accountId : undefined }),
    secret: cursorSecretOf(deps),
    decode: conversationPosition.decode,
    read: (after, take) => listConversationRows(deps.db.sql, projectId, filters, after, take),
    encode: conversationPosition.encode,
  }).catch(refusedCursor);
  const now = deps.clock.now();
  const marks = await marksOf(deps, projectId, 'id', page.map((r) => String(r.id)));
  const previews = await previewsOf(deps, projectId, page.map((r) => String(r.id)));
  const calls = await callMarksOf(deps, projectId, page.map((r) => String(r.id)));
  return {
    conversations: page.map((r) => ({
      ...conversationView(r, now),
      needs_reply: marks.get(String(r.id))?.needs_reply ?? false,
      unread: marks.get(String(r.id))?.unread ?? false,
      unread_count: marks.get(String(r.id))?.unread_count ?? 0,
      waiting_since: marks.get(String(r.id))?.waiting_since ?? null,
      preview: previews.get(String(r.id)) ?? null,
      call: calls.get(String(r.id)) ?? null,
    })),
    nextCursor,
  };
}

export interface ConversationDetail {
  conversation: ConversationView;
  contact: ContactView;
  messages: MessageView[];
  /** The conversation's latest calls (docs/calls.md), newest first. */
  calls: CallView[];
  nextCursor: string | null;
  /** A group conversation's participants (docs/groups.md), oldest member first; empty otherwise. */
  participants: Array<{ phone: string; joinedAt: Date; name: string | null }>;
  /** The customer's newest message of the Business app's history (coexistence), when any: they wrote before this app. */
  historyInboundAt: string | null;
}

function conversationId(id: string): bigint {
  if (!/^[0-9]{1,18}$/.test(id) || BigInt(id) < 1n) throw new DashboardRefusal(404, 'No such conversation in this project.');
  return BigInt(id);
}

/** One conversation, its customer and a page of its messages (newest first). */
export async function conversationDetail(deps: ReadDeps, projectId: string, rawId: string, cursor?: string): Promise<ConversationDetail> {
  const id = conversationId(rawId);
  const row = await findConversationRow(deps.db.sql, projectId, id);
  if (!row) throw new DashboardRefusal(404, 'No such conversation in this project.');
  const group = row.kind === 'group';
  const contact = await findContactRow(deps.db.sql, projectId, BigInt(row.contact.id), { withGroups: group });
  if (!contact) throw new DashboardRefusal(404, 'No such conversation in this project.');
  const { page, nextCursor } = await keysetPage({ cursor, limit: CUSTOMER_PAGE }, {
    scope: cursorScope('dashboardConversationMessages', projectId, { conversation: id.toString() }),
    secret: cursorSecretOf(deps),
    decode: positions.timeAndId,
    read: (after, take) => listMessageRows(deps.db.sql, projectId, id, after, take),
    encode: (r) => [r.sentAt.getTime(), String(r.id)],
  }).catch(refusedCursor);
  const calls = await listCalls(deps, projectId, { conversationId: Number(id), limit: CUSTOMER_PAGE });
  const participants = group ? await groupParticipants(deps, projectId, BigInt(row.contact.id)) : [];
  // Only asked when the customer never wrote through this app (rare): one probe of (conversation_id, sent_at DESC, id DESC).
  const history = row.lastInboundAt || group ? undefined : (await queryRows<{ at: Date }>(
    deps.db.sql,
    `SELECT sent_at AS at FROM messages WHERE conversation_id = $1::bigint AND project_id = $2 AND history AND direction = 'inbound' ORDER BY sent_at DESC, id DESC LIMIT 1`,
    id.toString(), projectId,
  ))[0]?.at;
  return {
    conversation: conversationView(row, deps.clock.now()), contact: contactView(contact), messages: page.map((m) => messageView(m)), calls, nextCursor, participants,
    historyInboundAt: history ? history.toISOString() : null,
  };
}

/** Who is in the group whose own record is `contactId` (lib/groups/store.ts writes them). */
async function groupParticipants(deps: ReadDeps, projectId: string, contactId: bigint): Promise<Array<{ phone: string; joinedAt: Date; name: string | null }>> {
  // With the name the project knows for the phone (its customer's contact), when it knows one.
  const rows = await queryRows<{ wa_id: string; joined_at: Date; name: string | null }>(
    deps.db.sql,
    `SELECT p.wa_id, p.joined_at, (SELECT c.name FROM contacts c WHERE c.project_id = g.project_id AND c.kind = 'customer' AND c.phone = p.wa_id LIMIT 1) AS name
       FROM group_participants p JOIN groups g ON g.id = p.group_row_id
      WHERE g.project_id = $1 AND g.contact_id = $2::bigint ORDER BY p.joined_at, p.wa_id LIMIT 1024`,
    projectId, String(contactId),
  );
  return rows.map((r) => ({ phone: `+${r.wa_id}`, joinedAt: r.joined_at, name: r.name }));
}

export interface ConversationHistory {
  messages: number;
  notes: number;
  first: Date | null;
  /** Past conversations, newest first: see `PAST_GAP_HOURS`. */
  past: PastConversation[];
}

/**
 * A customer has one conversation per project (its messages, however old); the inbox shows its past
 * as the exchanges it holds, each begun after more than a day of silence (the customer service
 * window's length: a new exchange is one the window had closed before), as Chatwoot lists a
 * contact's previous conversations.
 */
export const PAST_GAP_HOURS = 24;
const PAST_SHOWN = 10;
/** The last messages the past is read from (a page read stays bounded for a very long conversation). */
const PAST_SCAN = 5000;

export interface PastConversation {
  started: Date;
  ended: Date;
  messages: number;
  /** The first message's id: the chat opens there. */
  firstMessageId: number;
}

/** The conversation's history beside the chat: how many messages and notes, since when, and its past exchanges. */
export async function conversationHistory(deps: ReadDeps, projectId: string, id: number): Promise<ConversationHistory> {
  const [rows, exchanges] = await Promise.all([
    queryRows<Omit<ConversationHistory, 'past'>>(
      deps.db.sql,
      `SELECT (SELECT count(*)::int FROM messages WHERE conversation_id = $2::bigint AND project_id = $1 AND status <> 'pending') AS messages,
              (SELECT count(*)::int FROM conversation_notes WHERE conversation_id = $2::bigint AND project_id = $1) AS notes,
              (SELECT min(sent_at) FROM messages WHERE conversation_id = $2::bigint AND project_id = $1) AS first`,
      projectId, String(id),
    ),
    queryRows<{ started: Date; ended: Date; messages: number; first_id: string }>(
      deps.db.sql,
      `WITH recent AS (
         SELECT id, sent_at FROM messages WHERE conversation_id = $2::bigint AND project_id = $1 AND status <> 'pending'
          ORDER BY sent_at DESC, id DESC LIMIT $4
       ), marked AS (
         SELECT id, sent_at, CASE WHEN sent_at - lag(sent_at) OVER (ORDER BY sent_at, id) > make_interval(hours => $3) THEN 1 ELSE 0 END AS begins
           FROM recent
       ), numbered AS (
         SELECT id, sent_at, sum(begins) OVER (ORDER BY sent_at, id) AS exchange FROM marked
       )
       SELECT min(sent_at) AS started, max(sent_at) AS ended, count(*)::int AS messages, (array_agg(id ORDER BY sent_at, id))[1]::text AS first_id
         FROM numbered GROUP BY exchange ORDER BY exchange DESC LIMIT $5`,
      projectId, String(id), PAST_GAP_HOURS, PAST_SCAN, PAST_SHOWN + 1,
    ),
  ]);
  // The newest exchange is the one the chat shows; the rest are past.
  const past = pastRows(exchanges).slice(1);
  return { ...rows[0], past };
}

function pastRows(rows: Array<{ started: Date; ended: Date; messages: number; first_id: string }>): PastConversation[] {
  return rows.map((r) => ({ started: r.started, ended: r.ended, messages: r.messages, firstMessageId: Number(r.first_id) }));
}

/** A person opened the conversation: its customer's messages until now are read. */
export function markSeen(deps: ReadDeps, projectId: string, id: number): Promise<void> {
  return markConversationSeen(deps.db.sql, projectId, BigInt(id), deps.clock.now());
}

/**
 * A message's text as the page shows it, from the contract's shape: a text's `text.body` (one
 * shape in both directions), a template's name, a caption, an interactive message's body, a
 * reaction's emoji; null for what has no text.
 */
/** The customer's answer to a call permission request (docs/calls.md), in words. */
function callPermissionWords(r: Record<string, unknown>): string {
  if (r.response !== 'accept') return 'Call permission: declined (the business may not call)';
  if (r.is_permanent === true) return 'Call permission: granted, permanently (the business may call)';
  const until = Number(r.expiration_timestamp);
  return `Call permission: granted${Number.isFinite(until) && until > 0 ? ` until ${new Date(until * 1000).toISOString()}` : ''} (the business may call)`;
}

/** What kind of message it is, in words: an interactive call permission answer is not "interactive". */
export function messageKindWords(m: MessageView): string {
  const i = (m.content as { interactive?: { type?: unknown } } | null)?.interactive;
  if (m.type === 'interactive' && i && typeof i === 'object' && i.type === 'call_permission_reply') return 'call permission answer';
  return m.type;
}

export function messageText(m: MessageView): string | null {
  const c = m.content as Record<string, unknown>;
  const obj = (v: unknown) => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined);
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const text = str(obj(c.text)?.body);
  if (text !== undefined) return text;
  const template = obj(c.template);
  if (template && str(template.name)) {
    const cards = Array.isArray(template.cards) ? template.cards.length : 0;
    const expiry = Number(obj(template.limited_time_offer)?.expiration_time_ms);
    return `Template ${String(template.name)}${Array.isArray(template.variables) && template.variables.length ? ` (${template.variables.map(String).join(', ')})` : ''}`
      + (cards ? `; ${cards} carousel cards` : '')
      + (Number.isFinite(expiry) ? `; offer ends ${new Date(expiry).toISOString()}` : '');
  }
  // A contact card (e.g. the customer answering a REQUEST_CONTACT_INFO button with their number).
  const shared = Array.isArray(c.contacts) ? (c.contacts as unknown[]).map(obj).filter(Boolean) : [];
  if (m.type === 'contacts' && shared.length) {
    return `Shared contact: ${shared.map((x) => [str(obj(x!.name)?.formatted_name), ...((Array.isArray(x!.phones) ? x!.phones : []) as unknown[]).map((p) => str(obj(p)?.phone))].filter(Boolean).join(' ')).join('; ')}`;
  }
  const media = obj(c.media) ?? obj(c[m.type]);
  if (str(media?.caption)) return str(media!.caption)!;
  const interactive = obj(c.interactive);
  const permission = interactive?.type === 'call_permission_reply' ? obj(interactive.call_permission_reply) : undefined;
  if (permission) return callPermissionWords(permission);
  const body = str(interactive?.body) ?? str(obj(interactive?.body)?.text) ?? str(obj(obj(interactive?.button_reply))?.title) ?? str(obj(interactive?.list_reply)?.title);
  if (body) return body;
  if (str(obj(c.button)?.text)) return str(obj(c.button)!.text)!;
  if (str(obj(c.reaction)?.emoji)) return `Reaction ${str(obj(c.reaction)!.emoji)}`;
  return null;
}

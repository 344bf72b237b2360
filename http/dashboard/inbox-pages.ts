/**
 * The inbox (issue 60, item 1): three panes a team keeps open all day. The conversation list
 * (search; needs a reply, unread; assigned to me, unassigned or all; by label) beside the selected
 * conversation as a chat, oldest to newest, each message with its author (the customer, the bot, a
 * named person, an API key, an agent's connection, a schedule, a campaign) and its status, the
 * team's private notes between them (never sent), and the customer beside it (identity, consent,
 * attributes, tags, the conversation's history). Live without a reload: the page's stream
 * (inbox-live.ts) pushes the parts liveParts draws here; `/live` and `/list` answer them as JSON.
 *
 * Who may do what: every role reads, assigns (to anyone of the team, itself included), labels and
 * writes notes (lib/dashboard/conversation-actions.ts, the API's own functions); owners and admins
 * reply through the API's one send path (the window, then templates; quota, consent) and hand the
 * conversation to a person or back to the bot, as before. At 375 px the panes stack, the chat first.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage } from '../../lib/accounts/roles.js';
import { ApiError } from '../../lib/platform/errors.js';
import { HUMAN_STATE, projectLabels } from '../../lib/conversations/conversations.js';
import {
  conversationDetail, conversationHistory, conversationsPage, customerQuery, INBOX_DEFAULT_VIEW, markSeen, messageKindWords, messageText, UNREAD_COUNTED, unreadCount, waitingCount,
  PAST_GAP_HOURS, type ConversationDetail, type ConversationHistory, type ConversationListItem, type CustomerQuery,
} from '../../lib/dashboard/customer-reads.js';
import {
  assignAs, handConversation, labelDeltaAs, MAX_REPLY_CHARS, resolveAs, noteAs, offeredTemplates, sendReply, threadControlAs, type Reply,
} from '../../lib/dashboard/conversation-actions.js';
import { authorOf, authorWords, type Author } from '../../lib/conversations/authors.js';
import type { ContactView, MessageView } from '../../lib/conversations/views.js';
import { listMembers } from '../../lib/inbox/team.js';
import { listNotes, markMentionsSeen, noteView, unseenMentions, MAX_NOTE_CHARS, type NoteView } from '../../lib/inbox/notes.js';
import { createCannedReply, listCannedReplies } from '../../lib/inbox/canned-replies.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { duration, html, plural, when, type Html } from './html.js';
import { drawnField, drawnOf, drawnValue, isStale } from './inbox-versions.js';
import { autoAssignCard, autoAssignRoutes } from './inbox-assignment.js';
import { chatMediaOf, conversationMedia, mediaHtml, type ChatMedia } from './inbox-media.js';
import { MAX_CAPTION_CHARS, submitAttachment } from './inbox-attachment.js';
import { csrfField, layout, projectPath } from './layout.js';
import { field, send } from './request.js';
import { projectContext } from './context.js';
import { changeOnce, onceField } from './console-kit.js';
import type { PageRoute } from './page-routes.js';
import { readForm, type FormSchema } from './form-schema.js';

const MANAGERS = ['owner', 'admin'] as const;
/** Longest list of template variables a reply form takes. */
const MAX_VARIABLES = 20;
/** Notes shown beside a page of messages. */
const NOTES_SHOWN = 50;

export function consentWords(c: ContactView): string {
  const at = c.consent.updated_at ? ` ${when(c.consent.updated_at)}` : '';
  if (c.consent.status === 'opted_out') return `opted out${at}`;
  if (c.consent.status === 'opted_in') return `opted in${at}`;
  return 'unknown (not opted in)';
}

/** Who the customer is, in words: the name, else the username, phone or BSUID (never "+null"). */
export function customerName(c: { name: string | null; username: string | null; phone: string | null; user_id: string | null }): string {
  return c.name ?? (c.username ? `@${c.username}` : null) ?? c.phone ?? c.user_id ?? 'unknown customer';
}

/** The customer's identifiers, each only when known. */
export function identity(c: { phone: string | null; username: string | null; user_id: string | null }): Html {
  return html`${c.phone ? html`<dt>Phone</dt><dd>${c.phone}</dd>` : ''}${c.username ? html`<dt>Username</dt><dd>@${c.username}</dd>` : ''}${c.user_id ? html`<dt>BSUID</dt><dd><code>${c.user_id}</code></dd>` : ''}`;
}

/** How long the customer has waited, in words (`waiting 12 min`). */
export function waitWords(since: string | null | undefined, now: Date): string | undefined {
  if (!since) return undefined;
  return `waiting ${duration(Math.max(0, Math.round((now.getTime() - Date.parse(since)) / 1000)))}`;
}

export function marks(v: { needs_reply: boolean; unread: boolean; unread_count?: number; waiting_since?: string | null; resolution?: string; snoozed_until?: string | null }, now?: Date): Html {
  const waiting = now ? waitWords(v.waiting_since, now) : undefined;
  const count = v.unread_count ? `${v.unread_count >= UNREAD_COUNTED ? `${UNREAD_COUNTED}+` : v.unread_count} ` : '';
  return html`${v.needs_reply ? html` <span class="badge" data-mark="needs-reply">needs a reply${waiting ? html`, <span data-wait>${waiting}</span>` : ''}</span>` : ''}${v.unread ? html` <span class="badge" data-mark="unread">${count}unread</span>` : ''}${v.resolution && v.resolution !== 'open' ? html` <span class="badge" data-mark="${v.resolution}">${resolutionWords(v)}</span>` : ''}`;
}

/** The team's resolution in words. */
export function resolutionWords(v: { resolution?: string; snoozed_until?: string | null }): string {
  if (v.resolution === 'resolved') return 'resolved';
  if (v.resolution === 'snoozed') return `snoozed until ${when(v.snoozed_until)}`;
  return 'open';
}

/** The inbox's views; the first is the default (lib/dashboard/customer-reads.ts INBOX_DEFAULT_VIEW). */
const FILTERS: Array<[string, string]> = [
  ['needs_reply', 'Needs a reply'], ['open', 'Open (the customer wrote)'], ['unread', 'Unread'], ['snoozed', 'Snoozed'], ['resolved', 'Resolved'], ['missed_call', 'Missed calls'], ['all', 'All (campaign-only too)'],
];
const ASSIGNED: Array<[string, string]> = [['', 'Everyone’s'], ['mine', 'Assigned to me'], ['none', 'Unassigned']];

function listParams(q: CustomerQuery): URLSearchParams {
  const params = new URLSearchParams();
  if (q.q) params.set('q', q.q);
  if (q.filter) params.set('filter', q.filter);
  if (q.assigned) params.set('assigned', q.assigned);
  if (q.label) params.set('label', q.label);
  return params;
}

function withQuery(path: string, params: URLSearchParams): string {
  return params.size ? `${path}?${params}` : path;
}

function searchForm(action: string, q: CustomerQuery, labels: string[]): Html {
  const option = (value: string, label: string, chosen: string | undefined) => html`<option value="${value}"${(chosen ?? '') === value ? html` selected` : ''}>${label}</option>`;
  return html`<form method="get" action="${action}" class="inbox-filters" role="search">
  <label for="customer-q">Search by name, username, BSUID, phone or words of a message</label>
  <input id="customer-q" name="q" type="text" value="${q.q}" maxlength="100" placeholder="Ada, @ada, +1 415… or “broken box”">
  <details class="filters-more" open${q.filter || q.assigned || q.label ? html` data-chosen` : ''}><summary>Filters</summary><div class="filter-row">
  <span><label for="customer-filter">Show</label>
  <select id="customer-filter" name="filter">${FILTERS.map(([v, l]) => option(v, l, q.filter ?? INBOX_DEFAULT_VIEW))}</select></span>
  <span><label for="inbox-assigned">Assigned</label>
  <select id="inbox-assigned" name="assigned">${ASSIGNED.map(([v, l]) => option(v, l, q.assigned))}</select></span>
  <span><label for="inbox-label">Label</label>
  <select id="inbox-label" name="label">${option('', 'Any label', q.label)}${[...new Set([...labels, ...(q.label ? [q.label] : [])])].map((l) => option(l, l, q.label))}</select></span>
  </div></details>
  <button type="submit">Search conversations</button>
</form>`;
}

/** The list's call marker (docs/calls.md). */
const CALL_MARKS = { ringing: 'call ringing', in_progress: 'on a call', missed: 'missed call' } as const;

function listRows(projectId: string, conversations: ConversationListItem[], params: URLSearchParams, now: Date, selected?: number): Html {
  return html`${conversations.map((v) => html`<tr${v.id === selected ? html` aria-current="true" class="selected"` : ''} data-conversation="${v.id}"><td data-label="Customer"><a href="${withQuery(projectPath(projectId, `/conversations/${v.id}`), params)}">${customerName(v.contact)}</a>${marks(v, now)}${v.state === HUMAN_STATE ? html` <span class="badge" data-mark="handover">a person holds it</span>` : ''}${v.call ? html` <span class="badge" data-mark="call-${v.call}">${CALL_MARKS[v.call]}</span>` : ''}${(v.labels ?? []).map((l) => html` <span class="label">${l}</span>`)}${v.preview ? html`<span class="preview muted">${v.preview.direction === 'inbound' ? '' : 'Sent: '}${v.preview.text}</span>` : ''}</td><td data-label="Assigned">${v.assignee ? v.assignee.email : html`<span class="muted">unassigned</span>`}</td><td data-label="Last message">${when(v.last_message_at)}</td></tr>`)}`;
}

function listPane(projectId: string, q: CustomerQuery, labels: string[], list: { conversations: ConversationListItem[]; nextCursor: string | null }, now: Date, selected?: number, below?: Html): Html {
  const path = projectPath(projectId, '/conversations');
  const params = listParams(q);
  const filtered = q.q || (q.filter && q.filter !== 'needs_reply') || q.assigned || q.label;
  const next = new URLSearchParams(params);
  if (list.nextCursor) next.set('cursor', list.nextCursor);
  return html`<section class="inbox-list" aria-labelledby="list-title"><h2 id="list-title">Conversations</h2>
<p class="inbox-tools"><button type="button" id="alert-toggle" aria-pressed="false" hidden>Alert for new waiting customers: off</button> <button type="button" id="shortcuts-open" aria-haspopup="dialog">Keyboard shortcuts (?)</button></p>
${searchForm(path, q, labels)}
<div class="table-wrap"><table class="stack" id="conversations"${q.cursor ? html` data-paged="true"` : ''}><thead><tr><th scope="col">Customer</th><th scope="col">Assigned</th><th scope="col">Last message</th></tr></thead><tbody>
${listRows(projectId, list.conversations, params, now, selected)}
</tbody></table></div>
<p class="muted" id="no-conversations"${list.conversations.length ? html` hidden` : ''}>${filtered ? 'No conversation matches.' : 'Nobody is waiting for a reply. Choose “Open” or “All” to see the others.'}</p>
${list.nextCursor || q.cursor ? html`<p class="paging">${q.cursor ? html`<a href="${withQuery(path, params)}">First page</a> ` : ''}${list.nextCursor ? html`<a href="${`${path}?${next}`}" rel="next">Older conversations</a>` : ''}</p>` : ''}
${below ?? ''}
</section>`;
}

function stateWords(state: string): string {
  return state === HUMAN_STATE ? 'handover (a person answers)' : state;
}

/** Whether any message may be sent now: within the customer's window, or in a group (groups have no window, docs/groups.md). */
function freeToWrite(v: ConversationDetail['conversation']): boolean {
  return v.window_open || v.kind === 'group';
}

function windowWords(d: ConversationDetail): string {
  const v = d.conversation;
  if (v.kind === 'group') return 'none (a group has no customer service window): any message may be sent';
  if (v.window_open) return `open until ${when(v.window_expires_at)}: any message may be sent`;
  if (v.window_expires_at) return `closed since ${when(v.window_expires_at)}: only an approved template may be sent`;
  // History from the Business app is a past exchange, not a message to this app: it opens no window.
  if (d.historyInboundAt) return `closed: the customer last wrote ${when(d.historyInboundAt)} (Business app history, before this app), not to this app; only an approved template may be sent`;
  return 'the customer has never written: only an approved template may be sent';
}

function statusWords(m: MessageView): string {
  const err = m.error && typeof (m.error as { title?: unknown }).title === 'string' ? ` (${(m.error as { title: string }).title})` : '';
  return `${m.status}${err}${m.status !== 'received' ? ` · ${when(m.status_updated_at)}` : ''}`;
}

/** One item of the chat as the live script gets it (it fills the bubble with textContent: always text). */
interface ChatItem {
  key: string;
  kind: 'inbound' | 'outbound' | 'note' | 'call';
  author: string;
  authorKind: string;
  when: string;
  text: string;
  meta: string;
  at: number;
  /** A photo, video, audio, document, location or contacts (inbox-media.ts). */
  media?: ChatMedia;
  /** A past message of the Business app's history sync. */
  history?: boolean;
}

/** The participant who wrote a group message (docs/groups.md): its name and phone, as stored with it. */
function groupSenderWords(m: MessageView): string | undefined {
  const g = (m.content as { group_sender?: { phone?: unknown; name?: unknown } }).group_sender;
  if (m.direction !== 'inbound' || !g || typeof g !== 'object') return undefined;
  const phone = typeof g.phone === 'string' ? g.phone : undefined;
  const name = typeof g.name === 'string' && g.name ? g.name : undefined;
  return name && phone ? `${name} (${phone})` : name ?? phone;
}

function messageItem(m: MessageView, media: Map<number, ChatMedia>): ChatItem {
  const author: Author = m.author ?? authorOf({ direction: m.direction, author: null, sendRef: null }) ?? { kind: 'unknown', id: null, name: null };
  return {
    key: `m${m.id}`,
    kind: m.direction === 'inbound' ? 'inbound' : 'outbound',
    author: groupSenderWords(m) ?? authorWords(author as Author),
    authorKind: author.kind,
    when: when(m.created_at),
    text: messageText(m) ?? (media.has(m.id) ? '' : '—'),
    meta: `${messageKindWords(m)} · ${m.history ? 'history (from the Business app, before this app) · ' : ''}${statusWords(m)}`,
    at: Date.parse(m.created_at),
    ...(m.history ? { history: true } : {}),
    ...(media.has(m.id) ? { media: media.get(m.id) } : {}),
  };
}

function noteItem(n: NoteView): ChatItem {
  return { key: `n${n.id}`, kind: 'note', author: authorWords(n.author as Author), authorKind: n.author.kind, when: when(n.created_at), text: n.body, meta: 'private note · never sent to the customer', at: Date.parse(n.created_at) };
}

/** A call in the chat (docs/calls.md): who called, and how it went (ringing, answered, ended with its duration, missed). */
function callItem(c: ConversationDetail['calls'][number]): ChatItem {
  const by = c.direction === 'user_initiated' ? 'the customer' : 'the business';
  const how: Record<string, string> = {
    dialing: 'calling…', ringing: 'ringing', pre_accepted: 'being answered', accepted: `answered ${c.answered_at ? when(c.answered_at) : ''}`.trim(),
    completed: `ended · ${c.duration_seconds ?? 0} s`, missed: 'missed', rejected: 'rejected', failed: 'failed',
  };
  return {
    key: `c${c.id}`, kind: 'call', author: by, authorKind: 'call', when: when(c.started_at),
    text: `Voice call from ${by}: ${how[c.status] ?? c.status}`, meta: `call · ${c.status}`, at: Date.parse(c.started_at),
  };
}

/** Messages (a page, newest first), calls and notes as one chat, oldest to newest; with an older page, only the notes and calls of the shown span. */
function chatItems(d: ConversationDetail, notes: NoteView[], media: Map<number, ChatMedia>): ChatItem[] {
  const messages = [...d.messages].reverse().map((m) => messageItem(m, media));
  const from = d.nextCursor && messages.length ? messages[0].at : -Infinity;
  const items = [...messages, ...notes.filter((n) => Date.parse(n.created_at) >= from).map(noteItem), ...d.calls.filter((c) => Date.parse(c.started_at) >= from).map(callItem)];
  return items.sort((a, b) => a.at - b.at || (a.kind === 'note' ? 1 : 0) - (b.kind === 'note' ? 1 : 0));
}

function bubble(i: ChatItem): Html {
  return html`<li class="bubble ${i.kind}${i.history ? ' history' : ''}" data-item="${i.key}" data-author="${i.authorKind}"><p class="by"><span class="author">${i.author}</span> <span class="muted">${i.when}</span></p>${i.media ? mediaHtml(i.media, i.author) : ''}<p class="message-text">${i.text}</p><p class="meta muted">${i.meta}</p></li>`;
}

interface Kept {
  error?: string;
  status?: number;
  text?: string;
}

async function notesOf(deps: AppDeps, projectId: string, id: number): Promise<NoteView[]> {
  return (await listNotes(deps.db.sql, projectId, BigInt(id), undefined, NOTES_SHOWN)).map(noteView);
}

/** A group conversation's pane (docs/groups.md): the group, its status and its participants; its page has the group's actions. */
function groupPane(d: ConversationDetail, history: ConversationHistory, projectId: string): Html {
  const g = d.conversation.group;
  return html`<aside class="inbox-contact" aria-labelledby="contact-title"><h2 id="contact-title">Group: ${g?.subject ?? d.contact.name ?? '—'}</h2>
<dl class="facts">
  <dt>Kind</dt><dd>WhatsApp group</dd>
  <dt>Status</dt><dd>${g?.status ?? '—'}</dd>
  <dt>Participants</dt><dd>${String(d.participants.length)}</dd>
</dl>
<h3 id="participants-title">Participants</h3>
${d.participants.length
    ? html`<ul class="history participants" aria-labelledby="participants-title">${d.participants.map((p) => html`<li>${p.name ? `${p.name} (${p.phone})` : p.phone} <span class="muted">since ${when(p.joinedAt)}</span></li>`)}</ul>`
    : html`<p class="muted">Nobody has joined yet: users join by the group's invite link.</p>`}
${g ? html`<p><a href="${projectPath(projectId, `/groups/${g.id}`)}" id="group-page-link">The group's page: invite link, join requests, participants, subject</a></p>` : ''}
<h3>History</h3>
<ul class="history">
  <li>First message ${when(history.first)}; ${plural(history.messages, 'message')} in all</li>
  <li>Conversation opened ${when(d.conversation.created_at)}</li>
</ul>
</aside>`;
}

function contactPane(d: ConversationDetail, history: ConversationHistory, projectId: string): Html {
  if (d.conversation.kind === 'group') return groupPane(d, history, projectId);
  const contactsPath = projectPath(projectId, '/contacts');
  const c = d.contact;
  const attributes = Object.entries(c.attributes);
  return html`<aside class="inbox-contact" aria-labelledby="contact-title"><h2 id="contact-title">Customer</h2>
<dl class="facts">
  <dt>Customer</dt><dd>${c.name ?? '—'}</dd>
  ${identity(c)}
  <dt>Consent</dt><dd>${consentWords(c)}</dd>
  <dt>Tags</dt><dd>${c.tags.length ? c.tags.join(', ') : '—'}</dd>
  ${attributes.map(([k, v]) => html`<dt>${k}</dt><dd>${String(v)}</dd>`)}
</dl>
<h3>History</h3>
<ul class="history">
  <li>Customer since ${when(c.created_at)}</li>
  <li>First message ${when(history.first)}; ${plural(history.messages, 'message')} in all</li>
  <li>${plural(history.notes, 'private note')}</li>
  <li>Conversation opened ${when(d.conversation.created_at)}</li>
</ul>
<h3 id="past-title">Past conversations</h3>
${history.past.length
    ? html`<ol class="history past" aria-labelledby="past-title">${history.past.map((p) => html`<li>${when(p.started)} to ${when(p.ended)}: ${plural(p.messages, 'message')}</li>`)}</ol>`
    : html`<p class="muted" id="no-past">None: every message is of this exchange (a new one begins after ${PAST_GAP_HOURS} hours of silence).</p>`}
<p><a href="${contactsPath}">All contacts</a></p>
</aside>`;
}

/** Mentions shown at once; the rest are counted. */
const MENTIONS_SHOWN = 5;

/** The notes that @mention the person and that they have not opened yet (lib/inbox/notes.ts), above the inbox. */
async function mentionsNotice(deps: AppDeps, ctx: Ctx): Promise<{ card: Html; count: number }> {
  const { mentions, count } = await unseenMentions(deps.db.sql, ctx.project.id, ctx.actor.accountId, MENTIONS_SHOWN);
  if (!count) return { card: html``, count };
  return { count, card: html`<section class="card mentions" id="mentions" aria-labelledby="mentions-title"><h2 id="mentions-title">Mentioned you <span class="badge" data-mark="mentions">${count >= 100 ? '99+' : String(count)}</span></h2>
<ul>${mentions.map((m) => html`<li><a href="${projectPath(ctx.project.id, `/conversations/${m.conversation_id}`)}">${authorWords(m.author as Author)}</a> <span class="muted">${when(m.created_at)}</span>: <span class="message-text">${[...m.body].length > 140 ? `${[...m.body].slice(0, 139).join('')}…` : m.body}</span></li>`)}</ul>
${count > mentions.length ? html`<p class="muted">and ${plural(count - mentions.length, 'more note')}</p>` : ''}
</section>` };
}

async function renderInbox(deps: AppDeps, req: Request, res: Response, kept: Kept = {}) {
  const ctx = await projectContext(deps, req, 'conversations');
  const q = customerQuery(req.query);
  const selectedId = req.params.conversationId !== undefined ? String(req.params.conversationId) : undefined;
  const cursor = selectedId && typeof req.query.before === 'string' && req.query.before ? req.query.before : undefined;
  const detail = selectedId ? await conversationDetail(deps, ctx.project.id, selectedId, cursor) : undefined;
  if (detail && !cursor && req.method === 'GET') {
    await markSeen(deps, ctx.project.id, detail.conversation.id);
    await markMentionsSeen(deps.db.sql, ctx.project.id, BigInt(detail.conversation.id), ctx.actor.accountId, deps.clock.now());
  }
  const mentions = await mentionsNotice(deps, ctx);
  const labels = await projectLabels(deps.db.sql, ctx.project.id);
  const list = await conversationsPage(deps, ctx.project.id, q, ctx.actor.accountId);
  const pane = listPane(ctx.project.id, q, labels, list, deps.clock.now(), detail?.conversation.id, detail ? undefined : await autoAssignCard(deps, ctx));
  // The chosen template rides in the query string (the template chooser is a GET form).
  const template = typeof req.query.template === 'string' ? req.query.template : undefined;
  const panes = detail ? await chatPane(deps, ctx, q, detail, cursor, kept, template) : undefined;
  const chat = panes ? panes.chat : html`<section class="inbox-chat" aria-labelledby="chat-title"><h2 id="chat-title">Choose a conversation</h2><p class="muted">Open a conversation from the list to read it as a chat, assign it, label it, write private notes and reply.</p></section>`;
  const contact = detail
    ? html`<div class="inbox-side"><div hx-boost="false">${contactPane(detail, await conversationHistory(deps, ctx.project.id, detail.conversation.id), ctx.project.id)}</div>${panes?.side ?? ''}</div>`
    : html``;
  const waiting = await waitingCount(deps, ctx.project.id);
  const unread = await unreadCount(deps, ctx.project.id);
  // The page's live stream (inbox-live.ts) for its own list query and conversation; links and forms
  // inside are fetched by htmx and swapped in place of <main> (no full reload), the URL kept.
  const events = new URLSearchParams(listParams(q));
  if (detail) events.set('selected', String(detail.conversation.id));
  if (q.cursor) events.set('paged', 'true');
  const live = cursor ? '' : html` hx-ext="sse" sse-connect="${withQuery(projectPath(ctx.project.id, '/conversations/events'), events)}"`;
  const body = html`${mentions.card}${detail ? html`<p class="jump"><a href="#chat-title">Jump to the conversation</a></p>` : ''}<div class="inbox${detail ? ' selected' : ''}"${live} hx-boost="true" hx-target="#main" hx-select="#main" hx-swap="outerHTML">${live ? html`<div id="live-sink" hidden sse-swap="update" hx-swap="none"></div>` : ''}${countsHtml(waiting, unread, mentions.count)}${pane}${chat}${contact}</div>
${shortcutsDialog()}`;
  const title = detail ? (detail.conversation.kind === 'group' ? `Group conversation: ${detail.conversation.group?.subject ?? detail.contact.name ?? ''}` : `Conversation with ${customerName(detail.contact)}`) : 'Inbox';
  send(res, kept.status ?? 200, layout(ctx.shell(title, { error: kept.error, tabPrefix: tabPrefix(waiting) }), body));
}

type Ctx = Awaited<ReturnType<typeof projectContext>>;

/** The counts the tab's title and the opt-in alert read (dashboard.js), pushed as `counts`. */
function countsHtml(waiting: number, unread: number, mentions: number, oob = false): Html {
  return html`<span id="inbox-counts" hidden data-waiting="${String(waiting)}" data-unread="${String(unread)}" data-mentions="${String(mentions)}"${oob ? html` hx-swap-oob="true"` : ''}></span>`;
}

/** The notes naming the person that they have not seen yet (the tab title counts them). */
async function mentionCount(deps: AppDeps, ctx: Ctx): Promise<number> {
  return (await unseenMentions(deps.db.sql, ctx.project.id, ctx.actor.accountId, 0)).count;
}

/** The keyboard's shortcuts (dashboard.js acts on them; `?` opens this list). */
export const SHORTCUTS: Array<[string, string]> = [
  ['j', 'Next conversation in the list'], ['k', 'Previous conversation in the list'], ['r', 'Write a reply (or a note when your role does not reply)'],
  ['a', 'Assign the conversation to me'], ['e', 'Resolve the conversation'], ['/', 'Search conversations'], ['?', 'Show or hide this list'],
];

function shortcutsDialog(): Html {
  return html`<dialog id="shortcuts" aria-labelledby="shortcuts-title"><h2 id="shortcuts-title">Keyboard shortcuts</h2>
<dl class="shortcuts">${SHORTCUTS.map(([k, what]) => html`<dt><kbd>${k}</kbd></dt><dd>${what}</dd>`)}</dl>
<p class="muted">Not while typing in a field; Escape leaves a field. In a reply, a message starting with <kbd>/</kbd> offers the canned replies.</p>
<form method="dialog"><button type="submit">Close</button></form></dialog>`;
}

/**
 * The parts of an inbox page its live stream pushes (inbox-live.ts), drawn as the page draws them:
 * the list's rows (not for an older page of the list), the counts, and for an open conversation its
 * chat (newest page) and state line. A person with the conversation open has seen its messages.
 * Each is an out-of-band swap for htmx (`hx-swap-oob`: its content into the part of the page it names).
 */
export async function liveParts(deps: AppDeps, ctx: Ctx, q: CustomerQuery, opts: { selected?: string; paged: boolean }): Promise<Record<string, string | undefined>> {
  const parts: Record<string, string | undefined> = {};
  let selected: number | undefined;
  if (opts.selected) {
    const d = await conversationDetail(deps, ctx.project.id, opts.selected);
    await markSeen(deps, ctx.project.id, d.conversation.id);
    selected = d.conversation.id;
    const notes = await notesOf(deps, ctx.project.id, d.conversation.id);
    parts.chat = String(html`<ol hx-swap-oob="innerHTML:#messages">${chatItems(d, notes, await chatMediaOf(deps, ctx.project.id, d.conversation.id, d.messages)).map(bubble)}</ol>`);
    parts.facts = String(html`<p hx-swap-oob="innerHTML:#chat-facts">${chatFacts(d)}</p>`);
  }
  if (!opts.paged) {
    const list = await conversationsPage(deps, ctx.project.id, { ...q, cursor: undefined }, ctx.actor.accountId);
    parts.list = String(html`<tbody hx-swap-oob="innerHTML:#conversations > tbody">${listRows(ctx.project.id, list.conversations, listParams(q), deps.clock.now(), selected)}</tbody>`);
  }
  parts.counts = String(countsHtml(await waitingCount(deps, ctx.project.id), await unreadCount(deps, ctx.project.id), await mentionCount(deps, ctx), true));
  return parts;
}

/** The chat with its actions bar and reply, and what goes beside the customer (the thread, the canned replies). */
async function chatPane(deps: AppDeps, ctx: Ctx, q: CustomerQuery, d: ConversationDetail, cursor: string | undefined, kept: Kept, template: string | undefined): Promise<{ chat: Html; side: Html }> {
  const v = d.conversation;
  const manage = canManage(ctx.role);
  const path = projectPath(ctx.project.id, `/conversations/${v.id}`);
  const params = listParams(q);
  const notes = await notesOf(deps, ctx.project.id, v.id);
  const members = await listMembers(deps.db.sql, ctx.project.id);
  const canned = manage ? await listCannedReplies(deps.db.sql, ctx.project.id) : [];
  const held = v.state === HUMAN_STATE;
  const mine = v.assignee?.id === ctx.actor.accountId;
  const items = chatItems(d, notes, await chatMediaOf(deps, ctx.project.id, v.id, d.messages));
  const older = new URLSearchParams(params);
  if (d.nextCursor) older.set('before', d.nextCursor);
  const chat = html`<section class="inbox-chat" aria-labelledby="chat-title"><h2 id="chat-title">${customerName(d.contact)}</h2>
<p class="chat-facts" id="chat-facts">${chatFacts(d)}</p>
<div class="chat-bar" role="group" aria-labelledby="team-title"><h3 id="team-title" class="visually-hidden">Team</h3>
${resolutionCard(ctx, v, path)}
<form method="post" action="${path}/assign" class="inline-form">${csrfField(ctx.csrf)}${onceField()}${drawnField(v, 'assignee')}
  <label for="assign-email">Assigned to</label>
  <select id="assign-email" name="email"><option value=""${v.assignee ? '' : html` selected`}>Nobody (unassigned)</option>${members.map((m) => html`<option value="${m.email}"${v.assignee?.id === m.id ? html` selected` : ''}>${m.email}${m.id === ctx.actor.accountId ? ' (me)' : ''}</option>`)}</select>
  <button type="submit">Save assignment</button>
</form>
${mine ? '' : html`<form method="post" action="${path}/assign" class="inline">${csrfField(ctx.csrf)}${onceField()}${drawnField(v, 'assignee')}<input type="hidden" name="email" value="${ctx.actor.email}"><button type="submit" data-key="a">Assign to me</button></form>`}
${v.labels?.length ? html`<p class="chips">${v.labels.map((l) => html`<span class="label">${l}</span> `)}</p>` : ''}
<form method="post" action="${path}/labels" class="inline-form">${csrfField(ctx.csrf)}${onceField()}${drawnField(v, 'labels')}
  <label for="labels-input">Labels (comma-separated)</label>
  <input id="labels-input" name="labels" type="text" maxlength="900" value="${(v.labels ?? []).join(', ')}" placeholder="vip, refund">
  <button type="submit">Save labels</button>
</form>
${manage ? html`<section class="bar-item" aria-labelledby="handover-title"><h3 id="handover-title">Who answers</h3>
${held
    ? html`<p>A person holds this conversation: the bot is not handed the customer's messages.</p>
<form method="post" action="${path}/handover" class="inline">${csrfField(ctx.csrf)}${onceField()}${drawnField(v, 'state')}<input type="hidden" name="to" value="bot"><button type="submit">Give back to the bot</button></form>`
    : html`<p>The bot answers this conversation (state ${v.state}).</p>
<form method="post" action="${path}/handover" class="inline">${csrfField(ctx.csrf)}${onceField()}${drawnField(v, 'state')}<input type="hidden" name="to" value="human"><button type="submit" class="primary">Take over (the bot stops answering)</button></form>`}
</section>` : ''}
</div>
${d.nextCursor ? html`<p class="paging"><a href="${`${path}?${older}`}" rel="prev">Older messages</a></p>` : ''}
${cursor ? html`<p class="muted">Older messages (not live). <a href="${withQuery(path, params)}">Newest</a></p>` : ''}
<section id="conversation-live" aria-label="Messages, oldest first">
${!cursor ? html`<p class="muted" id="live-status" role="status">Live: new messages appear without a reload.</p>` : ''}
<ol class="chat" id="messages" hx-boost="false">${items.map(bubble)}</ol>
<p class="muted" id="no-messages"${items.length ? html` hidden` : ''}>No messages.</p>
</section>
<div class="composer">
${manage ? replyCard(ctx, d, path, canned, kept, freeToWrite(v) ? [] : await offeredTemplates(deps, ctx.project.id), template) : html`<p class="muted">Your role (${ctx.role}) reads the conversation, assigns it, labels it and writes notes; owners and admins reply and hand it over.</p>`}
<form method="post" action="${path}/notes" class="note-form">${csrfField(ctx.csrf)}${onceField()}
  <label for="note-text">Private note (the team’s; never sent to the customer): @name or @email tells a colleague</label>
  <textarea id="note-text" name="note" rows="2" maxlength="${MAX_NOTE_CHARS}" required></textarea>
  <div class="actions"><button type="submit">Add note</button></div>
</form>
</div>
</section>`;
  const side = html`${manage ? html`${v.kind === 'group' ? '' : threadCard(ctx, v, path)}
<details class="card"><summary>Canned replies (${canned.length})</summary>
${canned.length ? html`<ul class="canned">${canned.map((c) => html`<li><strong>${c.shortcut}</strong>: <span class="message-text">${c.text}</span></li>`)}</ul>` : html`<p class="muted">None yet.</p>`}
<form method="post" action="${projectPath(ctx.project.id, '/conversations/canned-replies')}">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="back" value="${v.id}">
  <label for="canned-shortcut">Shortcut (lower-case letters, digits, _ or -)</label><input id="canned-shortcut" name="shortcut" type="text" maxlength="40" required pattern="[a-z0-9_\\-]+">
  <label for="canned-text">Text</label><textarea id="canned-text" name="text" rows="2" maxlength="${MAX_REPLY_CHARS}" required></textarea>
  <div class="actions"><button type="submit">Save canned reply</button></div>
</form></details>` : ''}`;
  return { chat, side };
}

/** The conversation's state line (drawn with the page, then pushed live: inbox-live.ts). */
function chatFacts(d: ConversationDetail): Html {
  const v = d.conversation;
  return html`<span>State: <span class="status" id="conversation-state">${stateWords(v.state)}</span></span> <span>Window: <span id="conversation-window">${windowWords(d)}</span></span> <span>Assigned: <span id="conversation-assignee">${v.assignee ? v.assignee.email : 'nobody'}</span></span> <span>Labels: <span id="conversation-labels">${v.labels?.length ? v.labels.join(', ') : '—'}</span></span> <span>Status: <span id="conversation-resolution">${resolutionWords(v)}</span></span> ${v.kind === 'group' ? '' : html`<span>Thread: <span id="conversation-thread">${threadWords(v)}</span></span>`}`;
}

/** Snoozes the form offers, in hours (the server adds them to its clock: no time zone to guess). */
const SNOOZES: Array<[number, string]> = [[1, '1 hour'], [4, '4 hours'], [24, '1 day'], [72, '3 days'], [168, '1 week']];

/** Resolve, snooze or reopen (issue 68): every role may; the customer's next message reopens it. */
function resolutionCard(ctx: Ctx, v: ConversationDetail['conversation'], path: string): Html {
  const open = (v.resolution ?? 'open') === 'open';
  return html`<div class="resolution" role="group" aria-labelledby="resolution-title"><p id="resolution-title">Status: ${resolutionWords(v)}${open ? '' : ' (the customer’s next message opens it again)'}</p>
${open
    ? html`<form method="post" action="${path}/resolution" class="inline">${csrfField(ctx.csrf)}${onceField()}${drawnField(v, 'resolution')}<input type="hidden" name="resolution" value="resolved"><button type="submit" data-key="e">Resolve</button></form>
<form method="post" action="${path}/resolution" class="inline-form">${csrfField(ctx.csrf)}${onceField()}${drawnField(v, 'resolution')}<input type="hidden" name="resolution" value="snoozed">
  <label for="snooze-hours">Snooze for</label><select id="snooze-hours" name="hours">${SNOOZES.map(([h, l]) => html`<option value="${String(h)}">${l}</option>`)}</select>
  <button type="submit">Snooze</button>
</form>`
    : html`<form method="post" action="${path}/resolution" class="inline">${csrfField(ctx.csrf)}${onceField()}${drawnField(v, 'resolution')}<input type="hidden" name="resolution" value="open"><button type="submit">Reopen</button></form>`}
</div>`;
}

/** Who holds the customer's thread at the channel (another app on the number, e.g. Meta's Business Agent). */
function threadWords(v: ConversationDetail['conversation']): string {
  const t = v.thread;
  if (!t || t.held_by === 'us') return 'this app';
  return `app ${t.app_id}${t.since ? ` since ${when(t.since)}` : ''} (the customer's messages are stored, not answered here)`;
}

/** Thread control (docs/coexistence.md): pass the thread to another app, take it back, release it. */
function threadCard(ctx: Ctx, v: ConversationDetail['conversation'], path: string): Html {
  const elsewhere = v.thread?.held_by === 'other_app';
  return html`<section class="card" aria-labelledby="thread-title"><h3 id="thread-title">Thread (other apps on this number)</h3>
${elsewhere
    ? html`<p>App ${v.thread!.app_id} holds this customer's thread: replies from here are refused until you take it back.</p>
<form method="post" action="${path}/thread" class="inline">${csrfField(ctx.csrf)}${onceField()}${drawnField(v, 'thread')}<input type="hidden" name="action" value="take"><button type="submit" class="primary">Take the thread back</button></form>`
    : html`<p>This app holds the thread.</p>
<form method="post" action="${path}/thread" class="inline-form">${csrfField(ctx.csrf)}${onceField()}${drawnField(v, 'thread')}<input type="hidden" name="action" value="pass">
  <label for="thread-target">Pass to app (its id)</label><input id="thread-target" name="target_app_id" type="text" inputmode="numeric" pattern="[0-9]{1,32}" maxlength="32" required>
  <button type="submit">Pass the thread</button>
</form>
<form method="post" action="${path}/thread" class="inline">${csrfField(ctx.csrf)}${onceField()}${drawnField(v, 'thread')}<input type="hidden" name="action" value="release"><button type="submit">Release the thread</button></form>`}
</section>`;
}

function replyCard(ctx: Ctx, d: ConversationDetail, path: string, canned: Array<{ shortcut: string; text: string }>, kept: Kept, templates: Awaited<ReturnType<typeof offeredTemplates>>, chosen: string | undefined): Html {
  return html`<section class="card" aria-labelledby="reply-title"><h3 id="reply-title">Reply</h3>
${freeToWrite(d.conversation)
    ? html`<form method="post" action="${path}/reply">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="kind" value="text">
  ${canned.length ? html`<label for="canned-pick">Canned reply</label><select id="canned-pick" data-fills="reply-text"><option value="">Choose one to fill the message</option>${canned.map((c) => html`<option value="${c.text}">${c.shortcut}</option>`)}</select>` : ''}
  <label for="reply-text">Message</label><textarea id="reply-text" name="text" rows="3" maxlength="${MAX_REPLY_CHARS}" required${canned.length ? html` aria-controls="canned-suggest" aria-autocomplete="list" aria-describedby="slash-hint"` : ''}>${kept.text ?? ''}</textarea>
  ${canned.length ? html`<p class="muted hint" id="slash-hint">Start with / to pick a canned reply.</p>` : ''}
  ${canned.length ? html`<ul id="canned-suggest" role="listbox" aria-label="Canned replies" hidden>${canned.map((c) => html`<li role="option" aria-selected="false" data-shortcut="${c.shortcut}" data-text="${c.text}"><strong>/${c.shortcut}</strong> <span class="muted">${c.text}</span></li>`)}</ul>` : ''}
  <div class="actions"><button type="submit" class="primary">Send reply</button></div>
</form>
${attachmentForm(ctx, path)}`
    : html`<p>${windowWords(d)}.</p>
${kept.text ? html`<p>Your message, not sent: <span class="message-text" id="unsent-text">${kept.text}</span></p>` : ''}
${templates.length ? templateForms(path, templates, ctx, chosen) : html`<p class="muted">No approved template can be sent from here (templates with a media header are sent through the API).</p>`}`}
</section>`;
}

/** A photo or a document with an optional caption (inbox-attachment.ts): the API's media upload, then its send path. */
function attachmentForm(ctx: Ctx, path: string): Html {
  return html`<details class="attachment"><summary>Attach a photo or a document</summary>
<form method="post" action="${path}/attachment" enctype="multipart/form-data">${csrfField(ctx.csrf)}${onceField()}
  <label for="attachment-file">Photo (JPEG or PNG, up to 5 MB) or document (PDF, Office, text, up to 100 MB)</label>
  <input id="attachment-file" name="file" type="file" required accept="image/jpeg,image/png,application/pdf,.doc,.docx,.xls,.xlsx,.ppt,.pptx,.txt">
  <label for="attachment-caption">Caption (optional)</label><input id="attachment-caption" name="caption" type="text" maxlength="${MAX_CAPTION_CHARS}">
  <div class="actions"><button type="submit">Send attachment</button></div>
</form></details>`;
}

function templateForms(path: string, templates: Awaited<ReturnType<typeof offeredTemplates>>, ctx: Ctx, chosen: string | undefined): Html {
  const template = chosen ? templates.find((t) => `${t.name}@${t.language}` === chosen) : undefined;
  return html`<form method="get" action="${path}" class="inline-form">
  <label for="reply-template">Approved template</label>
  <select id="reply-template" name="template">${templates.map((t) => html`<option value="${t.name}@${t.language}"${template === t ? html` selected` : ''}>${t.name} (${t.language}, ${t.category.toLowerCase()})</option>`)}</select>
  <button type="submit">Choose template</button>
</form>
${template ? html`<form method="post" action="${path}/reply">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="kind" value="template"><input type="hidden" name="template_name" value="${template.name}"><input type="hidden" name="template_language" value="${template.language}">
  <p class="muted">Text: <span class="message-text" id="template-body">${template.body || '(no body text)'}</span></p>
  ${Array.from({ length: Math.min(template.variables, MAX_VARIABLES) }, (_, i) => html`<label for="var-${i + 1}">Variable {{${i + 1}}}</label><input id="var-${i + 1}" name="var${i + 1}" type="text" required maxlength="1024">`)}
  <div class="actions"><button type="submit" class="primary">Send template ${template.name}</button></div>
</form>` : ''}`;
}

function render(deps: AppDeps, req: Request, res: Response, kept: Kept = {}) {
  return renderInbox(deps, req, res, kept);
}

export const showConversations = (deps: AppDeps) => (req: Request, res: Response) => render(deps, req, res);
export const showConversation = (deps: AppDeps) => (req: Request, res: Response) => render(deps, req, res);

/** The state, window, assignee, labels and the newest page of the chat, as JSON (the page itself is pushed: inbox-live.ts). */
export const conversationLive = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'conversations');
  const d = await conversationDetail(deps, ctx.project.id, String(req.params.conversationId));
  await markSeen(deps, ctx.project.id, d.conversation.id);
  const notes = await notesOf(deps, ctx.project.id, d.conversation.id);
  const v = d.conversation;
  res.setHeader('Cache-Control', 'no-store');
  res.json({
    state: stateWords(v.state),
    window: windowWords(d),
    assignee: v.assignee ? v.assignee.email : 'nobody',
    labels: v.labels?.length ? v.labels.join(', ') : '—',
    resolution: resolutionWords(v),
    items: chatItems(d, notes, await chatMediaOf(deps, ctx.project.id, v.id, d.messages)).map(({ at: _at, ...i }) => i),
  });
};

/** The tab's waiting count, so a person sees it from another tab: "(3) ", "(99+) ", nothing when nobody waits. */
function tabPrefix(waiting: number): string {
  return waiting ? `(${waiting >= 100 ? '99+' : waiting}) ` : '';
}

/** The list's rows for the same query, rendered and escaped here, as JSON (the page itself is pushed: inbox-live.ts). */
export const conversationList = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'conversations');
  const q = customerQuery(req.query);
  const list = await conversationsPage(deps, ctx.project.id, { ...q, cursor: undefined }, ctx.actor.accountId);
  const selected = typeof req.query.selected === 'string' ? Number(req.query.selected) : undefined;
  res.setHeader('Cache-Control', 'no-store');
  res.json({ count: list.conversations.length, rows: String(listRows(ctx.project.id, list.conversations, listParams(q), deps.clock.now(), selected)), tab: tabPrefix(await waitingCount(deps, ctx.project.id)) });
};

/** A text reply (a template reply's name, language and variables are checked by the send path). */
const TEXT_REPLY_FORM = {
  text: { trim: true, required: 'Write the message first; nothing was sent.', maxChars: { max: MAX_REPLY_CHARS, message: `A message has at most ${MAX_REPLY_CHARS} characters; nothing was sent.` } },
} satisfies FormSchema;

const HANDOVER_FORM = {
  to: { required: 'Say who answers (a person or the bot); nothing was changed.', oneOf: { values: ['human', 'bot'], message: 'Say who answers (a person or the bot); nothing was changed.' } },
} satisfies FormSchema;

const THREAD_FORM = {
  action: { required: 'Say what to do with the thread (pass, take or release); nothing was changed.', oneOf: { values: ['pass', 'take', 'release'], message: 'Say what to do with the thread (pass, take or release); nothing was changed.' } },
  target_app_id: { trim: true },
} satisfies FormSchema;

const NOTE_FORM = {
  note: { trim: true, required: 'Write the note first; nothing was saved.', maxChars: { max: MAX_NOTE_CHARS, message: `A note has at most ${MAX_NOTE_CHARS} characters; nothing was saved.` } },
} satisfies FormSchema;

const SHORTCUT = { re: /^[a-z0-9_-]{1,40}$/, message: 'A shortcut is 1 to 40 lower-case letters, digits, "_" or "-"; nothing was saved.' };
const CANNED_TEXT = `A canned reply has 1 to ${MAX_REPLY_CHARS} characters; nothing was saved.`;
const CANNED_REPLY_FORM = {
  shortcut: { trim: true, required: SHORTCUT.message, pattern: SHORTCUT },
  text: { trim: true, required: CANNED_TEXT, maxChars: { max: MAX_REPLY_CHARS, message: CANNED_TEXT } },
  back: {},
} satisfies FormSchema;

function replyOf(req: Request): Reply {
  if (field(req, 'kind') === 'template') {
    const name = field(req, 'template_name') ?? '';
    const language = field(req, 'template_language') ?? '';
    const variables: string[] = [];
    for (let i = 1; i <= MAX_VARIABLES; i++) {
      const value = field(req, `var${i}`);
      if (value === undefined) break;
      variables.push(value);
    }
    return { kind: 'template', name, language, variables };
  }
  const { text } = readForm(req, TEXT_REPLY_FORM);
  return { kind: 'text', text };
}

export const submitReply = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'conversations', MANAGERS, 'reply to customers');
  if (project.status !== 'active') throw new DashboardRefusal(409, `This project is ${project.status}: nothing can be sent.`);
  const reply = replyOf(req);
  const once = field(req, '_once') ?? '';
  try {
    await changeOnce(deps, req, res, project.id, async () => {
      const d = await conversationDetail(deps, project.id, String(req.params.conversationId));
      // The form's one-time token is the send's reference: one message per form, whatever happens to the page.
      await sendReply(deps, actor, { id: project.id, name: project.name, status: 'active' }, { id: d.conversation.id, contact: d.contact, group: d.conversation.group ?? null }, reply, `snd_dsh${once}`);
      return projectPath(project.id, `/conversations/${d.conversation.id}?done=reply_sent`);
    });
  } catch (e) {
    // The send path's refusal (outside the window, quota, consent, a template's variables) with its reason; the text is kept.
    if (!(e instanceof ApiError) || e.status >= 500) throw e;
    await render(deps, req, res, { error: `Not sent: ${e.message} (${e.code})`, status: e.status, text: reply.kind === 'text' ? reply.text : undefined });
  }
};

/**
 * Refuses a save whose form was drawn from a value a colleague has changed since (inbox-versions.ts):
 * the page is drawn again with the current value and the refusal in words (409); nothing is changed.
 */
async function refuseStale(deps: AppDeps, req: Request, res: Response, what: 'assignee' | 'state' | 'thread' | 'resolution', now: string, was: string): Promise<void> {
  const words = {
    assignee: ['the assignment', (x: string) => x || 'nobody'],
    state: ['who answers', (x: string) => stateWords(x)],
    thread: ['the thread’s holder', (x: string) => (x ? `app ${x}` : 'this app')],
    resolution: ['the status', (x: string) => x.replace(/@.*$/, (t) => ` until ${when(t.slice(1))}`)],
  } as const;
  const [name, show] = words[what];
  await render(deps, req, res, {
    status: 409,
    error: `Not saved: someone changed ${name} while your page was open. It is now ${show(now)} (your page showed ${show(was)}). The page below shows the current values; save again if you still want your change.`,
  });
}

/** A stale form's refusal inside changeOnce: thrown there, drawn after (nothing was changed). */
class Stale extends Error {
  constructor(readonly what: 'assignee' | 'state' | 'thread' | 'resolution', readonly now: string, readonly was: string) {
    super('stale form');
  }
}

/** Runs a change once, refusing it (409, the page drawn again) when its form is stale. */
async function changeUnlessStale(deps: AppDeps, req: Request, res: Response, projectId: string, what: 'assignee' | 'state' | 'thread' | 'resolution', change: (d: ConversationDetail) => Promise<string>): Promise<void> {
  try {
    await changeOnce(deps, req, res, projectId, async () => {
      const d = await conversationDetail(deps, projectId, String(req.params.conversationId));
      if (isStale(req, d.conversation, what)) throw new Stale(what, drawnValue(d.conversation, what), drawnOf(req, what) ?? '');
      return change(d);
    });
  } catch (e) {
    if (!(e instanceof Stale)) throw e;
    await refuseStale(deps, req, res, e.what, e.now, e.was);
  }
}

export const submitHandover = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'conversations', MANAGERS, 'hand conversations over');
  const to = readForm(req, HANDOVER_FORM).to as 'human' | 'bot';
  await changeUnlessStale(deps, req, res, project.id, 'state', async (d) => {
    await handConversation(deps, actor, project.id, d.conversation.id, to);
    return projectPath(project.id, `/conversations/${d.conversation.id}?done=${to === 'human' ? 'handed_to_human' : 'handed_to_bot'}`);
  });
};

export const submitThread = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'conversations', MANAGERS, 'pass, take or release threads');
  const form = readForm(req, THREAD_FORM);
  const action = form.action as 'pass' | 'take' | 'release';
  await changeUnlessStale(deps, req, res, project.id, 'thread', async (d) => {
    await threadControlAs(deps, actor, project.id, d.conversation.id, action, form.target_app_id ?? '');
    return projectPath(project.id, `/conversations/${d.conversation.id}?done=thread_${action}`);
  });
};

export const submitAssign = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'conversations');
  const email = (field(req, 'email') ?? '').trim();
  await changeUnlessStale(deps, req, res, project.id, 'assignee', async (d) => {
    await assignAs(deps, actor, project.id, d.conversation.id, email || null);
    return projectPath(project.id, `/conversations/${d.conversation.id}?done=${email ? 'assigned' : 'unassigned'}`);
  });
};

export const submitLabels = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'conversations');
  const labels = (field(req, 'labels') ?? '').split(',').map((l) => l.trim()).filter(Boolean);
  const drawn = drawnOf(req, 'labels');
  await changeOnce(deps, req, res, project.id, async () => {
    const d = await conversationDetail(deps, project.id, String(req.params.conversationId));
    // A form without the labels it was drawn from (an old page) saves against the current ones: its set wins, as before.
    const from = drawn === undefined ? d.conversation.labels ?? [] : drawn.split(',').filter(Boolean);
    const { merged } = await labelDeltaAs(deps, actor, project.id, d.conversation.id, from, labels);
    return projectPath(project.id, `/conversations/${d.conversation.id}?done=${merged ? 'labels_merged' : 'labels_saved'}`);
  });
};

const RESOLUTION_FORM = {
  resolution: { required: 'Say open, resolved or snoozed; nothing was changed.', oneOf: { values: ['open', 'resolved', 'snoozed'], message: 'Say open, resolved or snoozed; nothing was changed.' } },
  hours: { trim: true },
} satisfies FormSchema;

export const submitResolution = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'conversations');
  const form = readForm(req, RESOLUTION_FORM);
  const resolution = form.resolution as 'open' | 'resolved' | 'snoozed';
  const hours = Number(form.hours ?? '');
  if (resolution === 'snoozed' && !SNOOZES.some(([h]) => h === hours)) throw new DashboardRefusal(400, 'Choose how long to snooze; nothing was changed.');
  await changeUnlessStale(deps, req, res, project.id, 'resolution', async (d) => {
    const until = resolution === 'snoozed' ? new Date(deps.clock.now().getTime() + hours * 3_600_000) : undefined;
    await resolveAs(deps, actor, project.id, d.conversation.id, resolution, until);
    return projectPath(project.id, `/conversations/${d.conversation.id}?done=${resolution === 'open' ? 'reopened' : resolution}`);
  });
};

export const submitNote = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'conversations');
  const { note } = readForm(req, NOTE_FORM);
  await changeOnce(deps, req, res, project.id, async () => {
    const d = await conversationDetail(deps, project.id, String(req.params.conversationId));
    await noteAs(deps, actor, project.id, d.conversation.id, note);
    return projectPath(project.id, `/conversations/${d.conversation.id}?done=note_added`);
  });
};

export const submitCannedReply = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { project } = await projectContext(deps, req, 'conversations', MANAGERS, 'save canned replies');
  const { shortcut, text, back = '' } = readForm(req, CANNED_REPLY_FORM);
  await changeOnce(deps, req, res, project.id, async () => {
    try {
      await createCannedReply(deps.db.sql, project.id, shortcut, text, deps.clock.now());
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) throw new DashboardRefusal(409, `${e.message} Nothing was saved.`);
      throw e;
    }
    return projectPath(project.id, /^[0-9]{1,18}$/.test(back) ? `/conversations/${back}?done=canned_saved` : '/conversations?done=canned_saved');
  });
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const inboxRoutes: PageRoute[] = [
  // Multipart and streamed: mounted before the form parser; the handler reads the session and checks the CSRF field itself.
  {
    method: 'post', path: '/projects/:projectId/conversations/:conversationId/attachment', stage: 'stream',
    handler: (deps) => (req, res) => submitAttachment(deps)(req, res, (error, status) => render(deps, req, res, { error, status })),
  },
  { method: 'get', path: '/projects/:projectId/conversations', handler: showConversations },
  // The list's live rows and the canned replies come before the conversation's id.
  { method: 'get', path: '/projects/:projectId/conversations/list', handler: conversationList },
  { method: 'post', path: '/projects/:projectId/conversations/canned-replies', handler: submitCannedReply, form: CANNED_REPLY_FORM },
  ...autoAssignRoutes,
  { method: 'get', path: '/projects/:projectId/conversations/:conversationId', handler: showConversation },
  { method: 'post', path: '/projects/:projectId/conversations/:conversationId/assign', handler: submitAssign },
  { method: 'post', path: '/projects/:projectId/conversations/:conversationId/labels', handler: submitLabels },
  { method: 'post', path: '/projects/:projectId/conversations/:conversationId/resolution', handler: submitResolution, form: RESOLUTION_FORM },
  { method: 'post', path: '/projects/:projectId/conversations/:conversationId/notes', handler: submitNote, form: NOTE_FORM },
  { method: 'get', path: '/projects/:projectId/conversations/:conversationId/live', handler: conversationLive },
  { method: 'get', path: '/projects/:projectId/conversations/:conversationId/media/:messageId', handler: conversationMedia },
  { method: 'post', path: '/projects/:projectId/conversations/:conversationId/reply', handler: submitReply, form: TEXT_REPLY_FORM },
  { method: 'post', path: '/projects/:projectId/conversations/:conversationId/handover', handler: submitHandover, form: HANDOVER_FORM },
  { method: 'post', path: '/projects/:projectId/conversations/:conversationId/thread', handler: submitThread, form: THREAD_FORM },
];

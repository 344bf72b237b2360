/**
 * Contacts and Conversations (every role may look; owners and admins reply and hand over): find a
 * customer by name, username, BSUID or phone, filter those whose conversation needs a reply or is
 * unread, page on by keyset as the API does; read a conversation's messages (one text shape, as the
 * API gives them), follow new ones without a reload (dashboard.js polls `/live`), reply (a session
 * message inside the 24-hour window, else an approved template with its variables) through the API's
 * one send path, and hand the conversation to a person (the bot then stays silent) or back to the
 * bot (lib/dashboard/conversation-actions.ts). Text from customers is always shown as text.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage } from '../../lib/dashboard/roles.js';
import { ApiError } from '../../lib/platform/errors.js';
import { HUMAN_STATE } from '../../lib/conversations/conversations.js';
import {
  contactsPage, conversationDetail, conversationsPage, customerQuery, markSeen, messageText,
  type ConversationDetail, type CustomerQuery,
} from '../../lib/dashboard/customer-reads.js';
import { handConversation, MAX_REPLY_CHARS, offeredTemplates, sendReply, type Reply } from '../../lib/dashboard/conversation-actions.js';
import type { ContactView, MessageView } from '../../lib/conversations/views.js';
import { DashboardRefusal } from '../../lib/dashboard/refusal.js';
import { html, when, type Html } from './html.js';
import { csrfField, layout, projectPath } from './layout.js';
import { field, send } from './request.js';
import { projectContext } from './context.js';
import { changeOnce, onceField } from './console-kit.js';

const MANAGERS = ['owner', 'admin'] as const;
/** Longest list of template variables a reply form takes. */
const MAX_VARIABLES = 20;

function consent(c: ContactView): string {
  const at = c.consent.updated_at ? ` ${when(c.consent.updated_at)}` : '';
  if (c.consent.status === 'opted_out') return `opted out${at}`;
  if (c.consent.status === 'opted_in') return `opted in${at}`;
  return 'unknown (not opted in)';
}

/** Who the customer is, in words: the name, else the username, phone or BSUID (never "+null"). */
function customerName(c: { name: string | null; username: string | null; phone: string | null; user_id: string | null }): string {
  return c.name ?? (c.username ? `@${c.username}` : null) ?? c.phone ?? c.user_id ?? 'unknown customer';
}

/** The customer's identifiers, each only when known. */
function identity(c: { phone: string | null; username: string | null; user_id: string | null }): Html {
  return html`${c.phone ? html`<dt>Phone</dt><dd>${c.phone}</dd>` : ''}${c.username ? html`<dt>Username</dt><dd>@${c.username}</dd>` : ''}${c.user_id ? html`<dt>BSUID</dt><dd><code>${c.user_id}</code></dd>` : ''}`;
}

const FILTERS: Array<[string, string]> = [['', 'All'], ['needs_reply', 'Needs a reply'], ['unread', 'Unread']];

function searchForm(action: string, q: CustomerQuery, what: string): Html {
  return html`<form method="get" action="${action}" class="inline-form" role="search">
  <label for="customer-q">Search by name, username, BSUID or phone</label>
  <input id="customer-q" name="q" type="text" value="${q.q}" maxlength="100" placeholder="Ada, @ada, US.1349… or +1 415…">
  <label for="customer-filter">Show</label>
  <select id="customer-filter" name="filter">${FILTERS.map(([v, label]) => html`<option value="${v}"${(q.filter ?? '') === v ? html` selected` : ''}>${label}</option>`)}</select>
  <button type="submit">Search ${what}</button>
</form>`;
}

/** The links to the first and the next page, keeping the search and filter (the cursor is bound to both). */
function nextLink(path: string, q: CustomerQuery, cursor: string | null, label: string): Html {
  const params = new URLSearchParams();
  if (q.q) params.set('q', q.q);
  if (q.filter) params.set('filter', q.filter);
  const first = params.size ? `${path}?${params}` : path;
  if (cursor) params.set('cursor', cursor);
  if (!cursor && !q.cursor) return html``;
  return html`<p class="paging">${q.cursor ? html`<a href="${first}">First page</a> ` : ''}${cursor ? html`<a href="${`${path}?${params}`}" rel="next">${label}</a>` : ''}</p>`;
}

function marks(v: { needs_reply: boolean; unread: boolean }): Html {
  return html`${v.needs_reply ? html` <span class="badge" data-mark="needs-reply">needs a reply</span>` : ''}${v.unread ? html` <span class="badge" data-mark="unread">unread</span>` : ''}`;
}

export const showContacts = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'contacts');
  const q = customerQuery(req.query);
  const path = projectPath(ctx.project.id, '/contacts');
  const { contacts, nextCursor } = await contactsPage(deps, ctx.project.id, q);
  const body = html`${searchForm(path, q, 'contacts')}
<p class="muted">${contacts.length} ${contacts.length === 1 ? 'contact' : 'contacts'}${nextCursor ? ' on this page (newest first)' : ''}${q.q || q.filter ? ' match' : ''}.</p>
${contacts.length ? html`<div class="table-wrap"><table class="stack" id="contacts"><thead><tr><th scope="col">Customer</th><th scope="col">Phone</th><th scope="col">Username</th><th scope="col">BSUID</th><th scope="col">Consent</th><th scope="col">Tags</th><th scope="col">Conversation</th></tr></thead><tbody>
${contacts.map((c) => html`<tr><td data-label="Customer">${c.name ?? '—'}</td><td data-label="Phone">${c.phone ?? '—'}</td><td data-label="Username">${c.username ? `@${c.username}` : '—'}</td><td data-label="BSUID">${c.user_id ? html`<code>${c.user_id}</code>` : '—'}</td><td data-label="Consent">${consent(c)}</td><td data-label="Tags">${c.tags.length ? c.tags.join(', ') : '—'}</td><td data-label="Conversation">${c.conversation ? html`<a href="${projectPath(ctx.project.id, `/conversations/${c.conversation.id}`)}">Messages</a>${marks(c.conversation)}` : '—'}</td></tr>`)}
</tbody></table></div>` : html`<p class="muted">${q.q || q.filter ? 'No contact matches.' : 'No contacts yet.'}</p>`}
${nextLink(path, q, nextCursor, 'Next contacts')}`;
  send(res, 200, layout(ctx.shell('Contacts'), body));
};

export const showConversations = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'conversations');
  const q = customerQuery(req.query);
  const path = projectPath(ctx.project.id, '/conversations');
  const { conversations, nextCursor } = await conversationsPage(deps, ctx.project.id, q);
  const body = html`${searchForm(path, q, 'conversations')}
${conversations.length
    ? html`<p class="muted">Latest activity first.</p><div class="table-wrap"><table class="stack" id="conversations"><thead><tr><th scope="col">Customer</th><th scope="col">State</th><th scope="col">Last message</th><th scope="col">Window</th></tr></thead><tbody>
${conversations.map((v) => html`<tr><td data-label="Customer"><a href="${projectPath(ctx.project.id, `/conversations/${v.id}`)}">${customerName(v.contact)}</a>${marks(v)}</td><td data-label="State">${stateWords(v.state)}</td><td data-label="Last message">${when(v.last_message_at)}</td><td data-label="Window">${v.window_open ? `open until ${when(v.window_expires_at)}` : 'closed'}</td></tr>`)}
</tbody></table></div>`
    : html`<p class="muted">${q.q || q.filter ? 'No conversation matches.' : 'No conversations yet.'}</p>`}
${nextLink(path, q, nextCursor, 'Older conversations')}`;
  send(res, 200, layout(ctx.shell('Conversations'), body));
};

function stateWords(state: string): string {
  return state === HUMAN_STATE ? 'handover (a person answers)' : state;
}

function windowWords(d: ConversationDetail['conversation']): string {
  if (d.window_open) return `open until ${when(d.window_expires_at)}: any message may be sent`;
  if (d.window_expires_at) return `closed since ${when(d.window_expires_at)}: only an approved template may be sent`;
  return 'the customer has never written: only an approved template may be sent';
}

function statusWords(m: MessageView): string {
  const err = m.error && typeof (m.error as { title?: unknown }).title === 'string' ? ` (${(m.error as { title: string }).title})` : '';
  return `${m.status}${err}${m.status !== 'received' ? ` · ${when(m.status_updated_at)}` : ''}`;
}

/** One message as the live script gets it (it fills rows with textContent: always text). */
function liveMessage(m: MessageView) {
  return { id: m.id, when: when(m.created_at), direction: m.direction === 'inbound' ? 'from the customer' : 'to the customer', type: m.type, text: messageText(m) ?? '—', status: statusWords(m) };
}

function messageRows(messages: MessageView[]): Html {
  return html`${messages.map((m) => {
    const r = liveMessage(m);
    return html`<tr data-message="${r.id}"><td data-label="When">${r.when}</td><td data-label="Direction">${r.direction}</td><td data-label="Type">${r.type}</td><td data-label="Text" class="message-text">${r.text}</td><td data-label="Status">${r.status}</td></tr>`;
  })}`;
}

interface Kept {
  error?: string;
  status?: number;
  text?: string;
}

async function renderConversation(deps: AppDeps, req: Request, res: Response, kept: Kept = {}) {
  const ctx = await projectContext(deps, req, 'conversations');
  const cursor = typeof req.query.cursor === 'string' && req.query.cursor ? req.query.cursor : undefined;
  const d = await conversationDetail(deps, ctx.project.id, String(req.params.conversationId), cursor);
  const v = d.conversation;
  if (!cursor && req.method === 'GET') await markSeen(deps, ctx.project.id, v.id);
  const manage = canManage(ctx.role);
  const path = projectPath(ctx.project.id, `/conversations/${v.id}`);
  const chosen = typeof req.query.template === 'string' ? req.query.template : undefined;
  const templates = manage && !v.window_open ? await offeredTemplates(deps, ctx.project.id) : [];
  const template = chosen ? templates.find((t) => `${t.name}@${t.language}` === chosen) : undefined;
  const held = v.state === HUMAN_STATE;
  const body = html`<dl class="facts">
  <dt>Customer</dt><dd>${d.contact.name ?? '—'}</dd>
  ${identity(d.contact)}
  <dt>State</dt><dd class="status" id="conversation-state">${stateWords(v.state)}</dd>
  <dt>Window</dt><dd id="conversation-window">${windowWords(v)}</dd>
  <dt>Consent</dt><dd>${consent(d.contact)}</dd>
  <dt>Tags</dt><dd>${d.contact.tags.length ? d.contact.tags.join(', ') : '—'}</dd>
</dl>
<p><a href="${projectPath(ctx.project.id, '/conversations')}">All conversations</a></p>
${manage ? html`<section class="card" aria-labelledby="handover-title"><h2 id="handover-title">Who answers</h2>
${held
    ? html`<p>A person holds this conversation: the bot is not handed the customer's messages.</p>
<form method="post" action="${path}/handover" class="inline">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="to" value="bot"><button type="submit">Give back to the bot</button></form>`
    : html`<p>The bot answers this conversation (state ${v.state}).</p>
<form method="post" action="${path}/handover" class="inline">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="to" value="human"><button type="submit" class="primary">Take over (the bot stops answering)</button></form>`}
</section>
<section class="card" aria-labelledby="reply-title"><h2 id="reply-title">Reply</h2>
${v.window_open
    ? html`<form method="post" action="${path}/reply">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="kind" value="text">
  <label for="reply-text">Message</label><textarea id="reply-text" name="text" rows="3" maxlength="${MAX_REPLY_CHARS}" required>${kept.text ?? ''}</textarea>
  <div class="actions"><button type="submit" class="primary">Send reply</button></div>
</form>`
    : html`<p>${windowWords(v)}.</p>
${kept.text ? html`<p>Your message, not sent: <span class="message-text" id="unsent-text">${kept.text}</span></p>` : ''}
${templates.length ? html`<form method="get" action="${path}" class="inline-form">
  <label for="reply-template">Approved template</label>
  <select id="reply-template" name="template">${templates.map((t) => html`<option value="${t.name}@${t.language}"${template === t ? html` selected` : ''}>${t.name} (${t.language}, ${t.category.toLowerCase()})</option>`)}</select>
  <button type="submit">Choose template</button>
</form>
${template ? html`<form method="post" action="${path}/reply">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="kind" value="template"><input type="hidden" name="template_name" value="${template.name}"><input type="hidden" name="template_language" value="${template.language}">
  <p class="muted">Text: <span class="message-text" id="template-body">${template.body || '(no body text)'}</span></p>
  ${Array.from({ length: Math.min(template.variables, MAX_VARIABLES) }, (_, i) => html`<label for="var-${i + 1}">Variable {{${i + 1}}}</label><input id="var-${i + 1}" name="var${i + 1}" type="text" required maxlength="1024">`)}
  <div class="actions"><button type="submit" class="primary">Send template ${template.name}</button></div>
</form>` : ''}` : html`<p class="muted">No approved template can be sent from here (templates with a media header are sent through the API).</p>`}`}
</section>` : html`<p class="muted">Your role (${ctx.role}) reads the conversation; owners and admins reply and hand it over.</p>`}
<h2>Messages (latest first)</h2>
<section id="conversation-live"${cursor ? '' : html` data-live-url="${path}/live"`}>
${!cursor ? html`<p class="muted" id="live-status" role="status">Live: new messages appear without a reload.</p>` : html`<p class="muted">Older messages (not live). <a href="${path}">Newest</a></p>`}
<div class="table-wrap"><table class="stack" id="messages"><thead><tr><th scope="col">When</th><th scope="col">Direction</th><th scope="col">Type</th><th scope="col">Text</th><th scope="col">Status</th></tr></thead><tbody>
${messageRows(d.messages)}
</tbody></table></div>
<p class="muted" id="no-messages"${d.messages.length ? html` hidden` : ''}>No messages.</p>
</section>
${d.nextCursor ? html`<p class="paging"><a href="${path}?cursor=${encodeURIComponent(d.nextCursor)}" rel="next">Older messages</a></p>` : ''}`;
  send(res, kept.status ?? 200, layout(ctx.shell(`Conversation with ${customerName(d.contact)}`, { error: kept.error }), body));
}

export const showConversation = (deps: AppDeps) => (req: Request, res: Response) => renderConversation(deps, req, res);

/** What the live script polls: the state, the window and the newest page of messages, as JSON. */
export const conversationLive = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'conversations');
  const d = await conversationDetail(deps, ctx.project.id, String(req.params.conversationId));
  await markSeen(deps, ctx.project.id, d.conversation.id);
  res.setHeader('Cache-Control', 'no-store');
  res.json({ state: stateWords(d.conversation.state), window: windowWords(d.conversation), messages: d.messages.map(liveMessage) });
};

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
  const text = (field(req, 'text') ?? '').trim();
  if (!text) throw new DashboardRefusal(400, 'Write the message first; nothing was sent.');
  if ([...text].length > MAX_REPLY_CHARS) throw new DashboardRefusal(400, `A message has at most ${MAX_REPLY_CHARS} characters; nothing was sent.`);
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
      await sendReply(deps, actor, { id: project.id, name: project.name, status: 'active' }, { id: d.conversation.id, contact: d.contact }, reply, `snd_dsh${once}`);
      return projectPath(project.id, `/conversations/${d.conversation.id}?done=reply_sent`);
    });
  } catch (e) {
    // The send path's refusal (outside the window, quota, consent, a template's variables) with its reason; the text is kept.
    if (!(e instanceof ApiError) || e.status >= 500) throw e;
    await renderConversation(deps, req, res, { error: `Not sent: ${e.message} (${e.code})`, status: e.status, text: reply.kind === 'text' ? reply.text : undefined });
  }
};

export const submitHandover = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'conversations', MANAGERS, 'hand conversations over');
  const to = field(req, 'to');
  if (to !== 'human' && to !== 'bot') throw new DashboardRefusal(400, 'Say who answers (a person or the bot); nothing was changed.');
  await changeOnce(deps, req, res, project.id, async () => {
    const d = await conversationDetail(deps, project.id, String(req.params.conversationId));
    await handConversation(deps, actor, project.id, d.conversation.id, to);
    return projectPath(project.id, `/conversations/${d.conversation.id}?done=${to === 'human' ? 'handed_to_human' : 'handed_to_bot'}`);
  });
};

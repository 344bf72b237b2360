/**
 * Contacts and Conversations (every role may look; nothing is changed here): find the customer a
 * campaign or a bot talked to, with consent and tags, and read a conversation's messages with
 * their delivery statuses and the conversation's state. Dates in the dashboard's one format.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { contactsOf, conversationDetail, conversationsOf } from '../../lib/dashboard/customer-reads.js';
import { html, when } from './html.js';
import { layout, projectPath } from './layout.js';
import { send } from './request.js';
import { projectContext } from './context.js';

const phone = (digits: string) => `+${digits}`;

function consent(c: { opted_in: boolean; opted_in_at?: Date | null; opted_out_at: Date | null }): string {
  if (c.opted_out_at) return `opted out ${when(c.opted_out_at)}`;
  if (c.opted_in) return c.opted_in_at ? `opted in ${when(c.opted_in_at)}` : 'opted in';
  return 'unknown (not opted in)';
}

export const showContacts = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'contacts');
  const q = typeof req.query.q === 'string' ? req.query.q.slice(0, 100) : '';
  const rows = await contactsOf(deps, ctx.project.id, q);
  const body = html`<form method="get" action="${projectPath(ctx.project.id, '/contacts')}" class="inline" role="search">
  <label for="contact-q">Search by phone, name or username</label>
  <input id="contact-q" name="q" type="text" value="${q}" maxlength="100" placeholder="+1 415… or Ada">
  <button type="submit">Search</button>
</form>
<p class="muted">${rows.length === 50 ? 'The 50 most recently changed matches.' : `${rows.length} ${rows.length === 1 ? 'contact' : 'contacts'}${q ? ' match' : ''}.`}</p>
${rows.length ? html`<div class="table-wrap"><table class="stack" id="contacts"><thead><tr><th scope="col">Phone</th><th scope="col">Name</th><th scope="col">Username</th><th scope="col">Consent</th><th scope="col">Tags</th><th scope="col">Conversation</th></tr></thead><tbody>
${rows.map((c) => html`<tr><td data-label="Phone">${phone(c.phone)}</td><td data-label="Name">${c.name ?? '—'}</td><td data-label="Username">${c.username ?? '—'}</td><td data-label="Consent">${consent(c)}</td><td data-label="Tags">${c.tags.length ? c.tags.join(', ') : '—'}</td><td data-label="Conversation">${c.conversation_id ? html`<a href="${projectPath(ctx.project.id, `/conversations/${c.conversation_id}`)}">Messages</a>` : '—'}</td></tr>`)}
</tbody></table></div>` : html`<p class="muted">${q ? 'No contact matches.' : 'No contacts yet.'}</p>`}`;
  send(res, 200, layout(ctx.shell('Contacts'), body));
};

export const showConversations = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'conversations');
  const rows = await conversationsOf(deps, ctx.project.id);
  const body = rows.length
    ? html`<p class="muted">Latest first${rows.length === 50 ? ' (the 50 latest)' : ''}.</p><div class="table-wrap"><table class="stack" id="conversations"><thead><tr><th scope="col">Customer</th><th scope="col">State</th><th scope="col">Last message</th><th scope="col">Messages</th></tr></thead><tbody>
${rows.map((v) => html`<tr><td data-label="Customer"><a href="${projectPath(ctx.project.id, `/conversations/${v.id}`)}">${v.name ? `${v.name} (${phone(v.phone)})` : phone(v.phone)}</a></td><td data-label="State">${v.state}</td><td data-label="Last message">${when(v.last_message_at)}</td><td data-label="Messages">${v.messages}</td></tr>`)}
</tbody></table></div>`
    : html`<p class="muted">No conversations yet.</p>`;
  send(res, 200, layout(ctx.shell('Conversations'), body));
};

export const showConversation = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'conversations');
  const { conversation: v, messages } = await conversationDetail(deps, ctx.project.id, String(req.params.conversationId));
  const body = html`<dl class="facts">
  <dt>Customer</dt><dd>${v.name ?? '—'} (${phone(v.phone)})</dd>
  <dt>State</dt><dd class="status" id="conversation-state">${v.state}</dd>
  <dt>Consent</dt><dd>${consent(v)}</dd>
  <dt>Tags</dt><dd>${v.tags.length ? v.tags.join(', ') : '—'}</dd>
  <dt>Last message</dt><dd>${when(v.last_message_at)}</dd>
</dl>
<p><a href="${projectPath(ctx.project.id, '/conversations')}">All conversations</a></p>
<h2>Messages (latest first)</h2>
${messages.length ? html`<div class="table-wrap"><table class="stack" id="messages"><thead><tr><th scope="col">When</th><th scope="col">Direction</th><th scope="col">Type</th><th scope="col">Text</th><th scope="col">Status</th></tr></thead><tbody>
${messages.map((m) => html`<tr><td data-label="When">${when(m.sent_at)}</td><td data-label="Direction">${m.direction === 'inbound' ? 'from the customer' : 'to the customer'}</td><td data-label="Type">${m.type}</td><td data-label="Text">${m.text ?? '—'}</td><td data-label="Status">${m.status}${m.error ? ` (${m.error})` : ''}${m.status !== 'received' ? ` · ${when(m.status_at)}` : ''}</td></tr>`)}
</tbody></table></div>` : html`<p class="muted">No messages.</p>`}`;
  send(res, 200, layout(ctx.shell(`Conversation with ${v.name ?? phone(v.phone)}`), body));
};

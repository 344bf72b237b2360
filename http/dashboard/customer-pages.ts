/**
 * Contacts (every role may look): find a customer by name, username, BSUID or phone, filter those
 * whose conversation needs a reply or is unread, page on by keyset as the API does, and open their
 * conversation in the inbox (http/dashboard/inbox-pages.ts). Text from customers is always text.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { contactsPage, customerQuery, type CustomerQuery } from '../../lib/dashboard/customer-reads.js';
import { html, type Html } from './html.js';
import { layout, projectPath } from './layout.js';
import { send } from './request.js';
import { projectContext } from './context.js';
import { consentWords as consent, marks } from './inbox-pages.js';
import type { PageRoute } from './page-routes.js';

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

/** This module's pages under /dashboard (router.ts mounts them). */
export const customerRoutes: PageRoute[] = [
  { method: 'get', path: '/projects/:projectId/contacts', handler: showContacts },
];

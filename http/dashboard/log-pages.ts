/**
 * The console's logs page (issue 47, item 6), three logs of one project:
 * - webhook deliveries, per registration: each attempt's time, status, latency, error and the
 *   first bytes of the receiver's answer (lib/webhooks/delivery-log.ts, the operator API's read),
 *   newest first in keyset pages; owners and admins redeliver a finished delivery
 *   (lib/dashboard/redeliver.ts: lib/webhooks/store.ts's redeliver and its audit row in one transaction);
 * - the bot log (lib/bot/bot-log.ts, the operator API's read), by level;
 * - the API's refusals and failures by operation, status and code, from the per-project counts
 *   (lib/access/api-errors.ts): never a body, a header or a value.
 * Every text here can come from a customer, a bot or a receiver: the `html` tag shows it as text.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage } from '../../lib/accounts/roles.js';
import { redeliverAs } from '../../lib/dashboard/redeliver.js';
import { webhookDeliveryLog } from '../../lib/webhooks/delivery-log.js';
import { listBotLogs } from '../../lib/bot/bot-log.js';
import { recentApiErrors } from '../../lib/access/api-errors.js';
import { webhooksOf } from '../../lib/dashboard/reads.js';
import { html, when } from './html.js';
import { csrfField, layout, projectPath } from './layout.js';
import { send } from './request.js';
import { projectContext } from './context.js';
import { changeOnce, count, onceField } from './console-kit.js';
import type { PageRoute } from './page-routes.js';

const DELIVERY_PAGE = 20;
const BOT_LOG_LINES = 100;
const STATUSES = ['pending', 'succeeded', 'failed', 'canceled'];
const LEVELS = ['debug', 'info', 'warn', 'error'];
const ERROR_DAYS = 7;

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v ? v : undefined;
}

/** A page position: the last delivery shown, as `<created_at ms>.<id>`. */
function positionOf(text: string | undefined): { createdAt: Date; id: string } | undefined {
  const m = text ? /^(\d{1,15})\.([A-Za-z0-9_]{1,64})$/.exec(text) : null;
  return m ? { createdAt: new Date(Number(m[1])), id: m[2] } : undefined;
}

export const showLogs = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'logs');
  const projectId = ctx.project.id;
  const q = req.query as Record<string, unknown>;
  const hooks = (await webhooksOf(deps, projectId)).map((h) => h.webhook);
  const chosen = hooks.find((h) => h.id === str(q.webhook)) ?? hooks[0];
  const status = STATUSES.includes(str(q.status) ?? '') ? str(q.status) : undefined;
  const before = positionOf(str(q.before));
  const log = chosen ? await webhookDeliveryLog(deps, chosen.id, status, DELIVERY_PAGE + 1, before) : undefined;
  const deliveries = log?.deliveries.slice(0, DELIVERY_PAGE) ?? [];
  const more = (log?.deliveries.length ?? 0) > DELIVERY_PAGE;
  const level = LEVELS.includes(str(q.level) ?? '') ? str(q.level) : undefined;
  const botLog = await listBotLogs(deps.db.sql, projectId, level, BOT_LOG_LINES);
  const errors = await recentApiErrors(deps, projectId, ERROR_DAYS);
  const manage = canManage(ctx.role);
  const path = projectPath(projectId, '/logs');
  const link = (extra: Record<string, string | undefined>) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries({ webhook: chosen?.id, status, level, ...extra })) if (v) p.set(k, v);
    return `${path}?${p.toString()}`;
  };
  const last = deliveries[deliveries.length - 1];
  const webhookSection = html`<section class="card" aria-labelledby="deliveries-title"><h2 id="deliveries-title">Webhook deliveries</h2>
${hooks.length ? html`<form method="get" action="${path}" class="inline-form">
  <label for="log-webhook">Registration</label><select id="log-webhook" name="webhook">${hooks.map((h) => html`<option value="${h.id}"${h.id === chosen?.id ? html` selected` : ''}>${h.url}</option>`)}</select>
  <label for="log-status">Status</label><select id="log-status" name="status"><option value="">any</option>${STATUSES.map((s) => html`<option${s === status ? html` selected` : ''}>${s}</option>`)}</select>
  ${level ? html`<input type="hidden" name="level" value="${level}">` : ''}<button type="submit">Show</button></form>
${deliveries.length ? html`<div class="table-wrap"><table class="stack" id="deliveries"><thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Created</th>${manage ? html`<th scope="col">Redeliver</th>` : ''}</tr></thead><tbody>
${deliveries.map((d) => html`<tr id="delivery-${d.id}"><td data-label="Event">${d.event} <small class="muted">${d.id}</small></td><td data-label="Status" class="status">${d.status}${d.status === 'pending' && d.nextAttemptAt ? html` <small class="muted">next ${when(d.nextAttemptAt)}</small>` : ''}</td>
<td data-label="Attempts">${d.attemptLog.length ? html`<ol class="attempts">${d.attemptLog.map((a) => html`<li>${when(a.at)} · ${a.statusCode ?? 'no answer'} · ${a.durationMs} ms${a.error ? html` · <span class="error-text">${a.error}</span>` : ''}${a.responseExcerpt ? html`<br><code class="excerpt">${a.responseExcerpt}</code>` : ''}</li>`)}</ol>` : html`<span class="muted">none yet</span>`}</td>
<td data-label="Created">${when(d.createdAt)}</td>
${manage ? html`<td data-label="Redeliver">${d.status === 'pending' ? html`<span class="muted">in progress</span>` : html`<form method="post" action="${path}/deliveries/${encodeURIComponent(d.id)}/redeliver" class="inline">${csrfField(ctx.csrf)}${onceField()}<button type="submit" aria-label="Redeliver ${d.event} ${d.id}">Redeliver</button></form>`}</td>` : ''}</tr>`)}
</tbody></table></div>
<p class="paging">${before ? html`<a href="${link({})}">Newest</a> ` : ''}${more && last ? html`<a href="${link({ before: `${last.createdAt.getTime()}.${last.id}` })}" rel="next">Older deliveries</a>` : ''}</p>`
    : html`<p class="muted">No deliveries${status ? ` with status ${status}` : ''}.</p>`}` : html`<p class="muted">No webhook registrations (POST /v1/webhooks makes one).</p>`}
</section>`;
  const botSection = html`<section class="card" aria-labelledby="bot-log-title"><h2 id="bot-log-title">Bot log</h2>
<form method="get" action="${path}" class="inline-form">${chosen ? html`<input type="hidden" name="webhook" value="${chosen.id}">` : ''}${status ? html`<input type="hidden" name="status" value="${status}">` : ''}
  <label for="log-level">Level</label><select id="log-level" name="level"><option value="">any</option>${LEVELS.map((l) => html`<option${l === level ? html` selected` : ''}>${l}</option>`)}</select> <button type="submit">Show</button></form>
${botLog.length ? html`<div class="table-wrap"><table class="stack" id="bot-log"><thead><tr><th scope="col">When</th><th scope="col">Level</th><th scope="col">Kind</th><th scope="col">Message</th></tr></thead><tbody>
${botLog.map((l) => html`<tr class="level-${LEVELS.includes(l.level) ? l.level : 'info'}"><td data-label="When">${when(l.created_at)}</td><td data-label="Level">${l.level}</td><td data-label="Kind">${l.kind}</td><td data-label="Message"><code class="log-line">${l.message}</code></td></tr>`)}
</tbody></table></div><p class="muted">The newest ${BOT_LOG_LINES} lines; the project keeps its 1,000 newest.</p>` : html`<p class="muted">Nothing logged${level ? ` at level ${level}` : ''}.</p>`}
</section>`;
  const errorSection = html`<section class="card" aria-labelledby="api-errors-title"><h2 id="api-errors-title">API errors of the last ${ERROR_DAYS} days</h2>
<p class="muted">Requests of this project's keys that were refused or failed, counted by operation and error code (UTC days). No request or response content is kept.</p>
${errors.length ? html`<div class="table-wrap"><table class="stack" id="api-errors"><thead><tr><th scope="col">Operation</th><th scope="col">Status</th><th scope="col">Code</th><th scope="col">Count</th><th scope="col">Last</th></tr></thead><tbody>
${errors.map((e) => html`<tr><td data-label="Operation"><code>${e.operation}</code></td><td data-label="Status">${e.status}</td><td data-label="Code"><code>${e.code}</code></td><td data-label="Count">${count(e.count)}</td><td data-label="Last">${when(e.last_at)}</td></tr>`)}
</tbody></table></div>` : html`<p class="muted">No errors.</p>`}
</section>`;
  send(res, 200, layout(ctx.shell('Logs'), html`${webhookSection}${botSection}${errorSection}`));
};

export const submitRedeliver = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'logs', ['owner', 'admin'], 'redeliver webhooks');
  await changeOnce(deps, req, res, project.id, async () => {
    const done = await redeliverAs(deps, actor, project.id, String(req.params.deliveryId));
    return projectPath(project.id, `/logs?webhook=${encodeURIComponent(done.webhookId)}&done=redelivered`);
  });
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const logRoutes: PageRoute[] = [
  { method: 'get', path: '/projects/:projectId/logs', handler: showLogs },
  { method: 'post', path: '/projects/:projectId/logs/deliveries/:deliveryId/redeliver', handler: submitRedeliver },
];

/** The person's projects; a project's webhooks with their delivery log, templates, people (owners invite) and audit trail (owners). */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage, projectsOf } from '../../lib/accounts/roles.js';
import { decideTemplateAs } from '../../lib/dashboard/template-decision.js';
import { membersOf, templatesOf, webhooksOf } from '../../lib/dashboard/reads.js';
import { listAudit } from '../../lib/accounts/audit.js';
import { inviteAs, removeMemberAs } from '../../lib/dashboard/actions.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { html, plural, when } from './html.js';
import { projectFigures } from '../../lib/dashboard/overview.js';
import { auditChanges, type FieldChange } from '../../lib/accounts/audit-diff.js';
import { renderTemplate } from '../../lib/templates/render.js';
import { messagePreview } from './broadcast-pages.js';
import { csrfField, layout, projectPath } from './layout.js';
import { field, send } from './request.js';
import { person, projectContext } from './context.js';
import { inviteLink, pendingInvites } from '../../lib/accounts/invites.js';
import type { DashboardOptions, PageRoute } from './page-routes.js';

/** A time inside an audit value (ISO 8601), shown in the pages' one format. */
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/;

export const showProjects = (deps: AppDeps, opts: DashboardOptions) => async (req: Request, res: Response) => {
  const { session, actor } = person(req);
  const list = await projectsOf(deps, actor.accountId);
  const figures = await projectFigures(deps, list.map(({ project }) => project.id));
  const sim = deps.config.nodeEnv !== 'production' ? opts.simulatorUrl : undefined;
  const body = list.length
    ? html`<p class="muted">Today's figures (UTC day so far, ${when(deps.clock.now())}).</p>
<div class="table-wrap"><table class="stack" id="projects"><thead><tr><th scope="col">Project</th><th scope="col">Your role</th><th scope="col">Sent today</th><th scope="col">Delivered</th><th scope="col">Failed</th><th scope="col">Daily quota used</th><th scope="col">Waiting for a reply</th><th scope="col">Channel number</th>${sim ? html`<th scope="col">Simulator</th>` : ''}</tr></thead><tbody>
${list.map(({ project, role }) => {
    const f = figures.get(project.id)!;
    return html`<tr>
  <td data-label="Project"><a href="${projectPath(project.id, '/overview')}">${project.name}</a> <small class="muted">${project.id}${project.status !== 'active' ? ` · ${project.status}` : ''}</small></td>
  <td data-label="Your role">${role}</td>
  <td data-label="Sent today" data-figure="sent">${f.sent}</td>
  <td data-label="Delivered" data-figure="delivered">${f.delivered}</td>
  <td data-label="Failed" data-figure="failed"${f.failed ? html` class="error-text"` : ''}>${f.failed}</td>
  <td data-label="Daily quota used" data-figure="quota">${f.quotaLimit === null ? `${f.quotaUsed} (no quota)` : `${f.quotaUsed} of ${f.quotaLimit}`}</td>
  <td data-label="Waiting for a reply" data-figure="waiting">${f.waiting ? html`<a href="${projectPath(project.id, '/conversations')}">${plural(f.waiting, 'conversation')}</a>` : '0'}</td>
  <td data-label="Channel number">${project.channel ? (project.channel.displayPhoneNumber ?? project.channel.phoneNumberId) : html`<span class="muted">not connected</span>`}</td>
  ${sim ? html`<td data-label="Simulator">${project.channel ? html`<a href="${`${sim}/_sim/phone-numbers/${encodeURIComponent(project.channel.phoneNumberId)}`}">simulated number</a>` : '—'}</td>` : ''}
</tr>`;
  })}</tbody></table></div>`
    : html`<p>You have no role in any project yet. An owner can invite you.</p>`;
  const agents = html`<p><a href="/dashboard/agents">Connected AI agents</a> <span class="muted">(applications you or your projects' owners and admins connected through OAuth)</span></p>`;
  send(res, 200, layout({ title: 'Your projects', person: { email: actor.email, csrf: session.csrfToken } }, html`${body}${agents}`));
};

/** The project's overview (its entry in the project's menu): today's figures and the inbox's queues. */
export const showProjectOverview = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'overview');
  const f = (await projectFigures(deps, [ctx.project.id])).get(ctx.project.id)!;
  const inbox = projectPath(ctx.project.id, '/conversations');
  const body = html`<p class="muted">Today's figures (UTC day so far, ${when(deps.clock.now())}). <a href="/dashboard/projects">All your projects</a></p>
<dl class="facts" id="overview">
  <dt>Sent today</dt><dd data-figure="sent">${f.sent}</dd>
  <dt>Delivered</dt><dd data-figure="delivered">${f.delivered}</dd>
  <dt>Failed</dt><dd data-figure="failed"${f.failed ? html` class="error-text"` : ''}>${f.failed}</dd>
  <dt>Daily quota used</dt><dd data-figure="quota">${f.quotaLimit === null ? `${f.quotaUsed} (no quota)` : `${f.quotaUsed} of ${f.quotaLimit}`}</dd>
  <dt>Waiting for a reply</dt><dd data-figure="waiting">${f.waiting ? html`<a href="${`${inbox}?filter=needs_reply`}">${plural(f.waiting, 'conversation')}</a>` : '0'}</dd>
</dl>
<p><a href="${inbox}?assigned=mine">Assigned to me</a> · <a href="${inbox}?assigned=none&amp;filter=needs_reply">Unassigned and waiting</a> · <a href="${inbox}">The whole inbox</a></p>`;
  send(res, 200, layout(ctx.shell('Overview'), body));
};

export const showWebhooks = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'webhooks');
  const hooks = await webhooksOf(deps, ctx.project.id);
  const body = hooks.length
    ? html`${hooks.map(({ webhook: w, deliveries }) => html`<article class="card">
  <h2>${w.url}</h2>
  <dl class="facts">
    <dt>State</dt><dd>${w.is_active ? 'active' : 'inactive'} · ${w.failure_count} consecutive failures</dd>
    <dt>Events</dt><dd>${w.events.join(', ')}</dd>
    <dt>Last triggered</dt><dd>${when(w.last_triggered_at)}</dd>
  </dl>
  <h3>Recent deliveries</h3>
  ${deliveries.length ? html`<div class="table-wrap"><table class="stack"><thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Attempt log (latest first)</th><th scope="col">Created</th><th scope="col">Next attempt</th></tr></thead><tbody>
  ${deliveries.map((d) => html`<tr><td data-label="Event">${d.event}</td><td data-label="Status">${d.status}</td><td data-label="Attempts">${d.attempts}</td>
    <td data-label="Attempt log">${d.attemptLog.length ? html`<details><summary>${d.attemptLog[0].statusCode ?? d.attemptLog[0].error ?? '—'}</summary><ol reversed>${d.attemptLog.map((a) => html`<li>${when(a.at)}: ${a.statusCode ?? 'no answer'}${a.error ? ` (${a.error})` : ''}, ${a.durationMs ?? '—'} ms</li>`)}</ol></details>` : '—'}</td><td data-label="Created">${when(d.createdAt)}</td><td data-label="Next attempt">${when(d.nextAttemptAt)}</td></tr>`)}
  </tbody></table></div>` : html`<p class="muted">No deliveries yet.</p>`}
</article>`)}`
    : html`<p class="muted">No webhook registrations. They are made through the API (POST /v1/webhooks).</p>`;
  send(res, 200, layout(ctx.shell('Webhooks'), body));
};

export const showTemplates = (deps: AppDeps, opts: DashboardOptions = {}) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'templates');
  const rows = await templatesOf(deps, ctx.project.id);
  // Outside production, on the simulator, owners and admins decide a pending template as Meta's review would.
  const decides = canManage(ctx.role) && deps.config.nodeEnv !== 'production' && !!opts.simulatorUrl;
  const decide = (t: { name: string; language: string }, decision: 'APPROVED' | 'REJECTED', label: string) =>
    html`<form method="post" action="${projectPath(ctx.project.id, '/templates/decision')}" class="inline">${csrfField(ctx.csrf)}<input type="hidden" name="name" value="${t.name}"><input type="hidden" name="language" value="${t.language}"><input type="hidden" name="decision" value="${decision}"><button type="submit"${decision === 'REJECTED' ? html` class="danger"` : ''} aria-label="${label} ${t.name} (${t.language})">${label}</button></form>`;
  const body = html`${decides ? html`<p class="muted">Templates are decided by Meta's review in production. Here the simulator decides: it approves a new template after 3 s (SIMULATOR_TEMPLATE_AUTO_APPROVE_MS), or you decide below.</p>` : ''}
${rows.length
    ? html`<div class="table-wrap"><table class="stack"><thead><tr><th scope="col">Name</th><th scope="col">Language</th><th scope="col">Category</th><th scope="col">Status</th><th scope="col">Text</th><th scope="col">Updated</th>${decides ? html`<th scope="col">Decision</th>` : ''}</tr></thead><tbody>
${rows.map((t) => html`<tr><td data-label="Name">${t.name}</td><td data-label="Language">${t.language}</td><td data-label="Category">${t.category}</td><td data-label="Status" class="status">${t.status}${t.rejected_reason ? ` (${t.rejected_reason})` : ''}</td><td data-label="Text">${messagePreview(renderTemplate(t.components))}</td><td data-label="Updated">${when(t.updated_at)}</td>${decides ? html`<td data-label="Decision">${t.status === 'PENDING' ? html`${decide(t, 'APPROVED', 'Approve')} ${decide(t, 'REJECTED', 'Reject')}` : '—'}</td>` : ''}</tr>`)}
</tbody></table></div>`
    : html`<p class="muted">No templates.</p>`}`;
  send(res, 200, layout(ctx.shell('Templates'), body));
};

async function renderPeople(deps: AppDeps, req: Request, res: Response, status: number, extra: { link?: string; email?: string; role?: string; error?: string } = {}) {
  const ctx = await projectContext(deps, req, 'people');
  const members = await membersOf(deps, ctx.project.id);
  // Invitations look the same whether the email has an account or not (lib/accounts/invites.ts).
  const invites = await pendingInvites(deps, ctx.project.id);
  const body = html`${extra.link ? html`<section class="card" aria-labelledby="link-title"><h2 id="link-title">Invitation link for ${extra.email}</h2>
  <p>Send this link to the person: it works once, for 72 hours. They accept it with their dashboard password, or choose one if they are new; only then do they join. It is not shown again.</p>
  <div class="secret"><code id="new-secret">${extra.link}</code> <button type="button" data-copy="new-secret" aria-label="Copy the invitation link">Copy</button></div></section>` : ''}
<div class="table-wrap"><table class="stack"><thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Account</th>${ctx.role === 'owner' ? html`<th scope="col">Access</th>` : ''}</tr></thead><tbody>
${members.map((m) => html`<tr><td data-label="Email">${m.email}</td><td data-label="Role">${m.role}</td><td data-label="Account">${m.setUp ? 'active' : 'no password yet'}</td>
${ctx.role === 'owner' ? html`<td data-label="Access"><form method="post" action="${projectPath(ctx.project.id, '/people/remove')}" class="inline">${csrfField(ctx.csrf)}<input type="hidden" name="email" value="${m.email}"><button type="submit" class="danger" aria-label="Remove ${m.email} from the project">Remove</button></form></td>` : ''}</tr>`)}
${invites.map((i) => html`<tr><td data-label="Email">${i.email}</td><td data-label="Role">${i.role}</td><td data-label="Account">invited, not yet accepted</td>${ctx.role === 'owner' ? html`<td data-label="Access"></td>` : ''}</tr>`)}
</tbody></table></div>
${ctx.role === 'owner' ? html`<h2>Invite someone</h2>
<form method="post" action="${projectPath(ctx.project.id, '/people')}" class="card">
  ${csrfField(ctx.csrf)}
  <label for="invite-email">Email</label><input id="invite-email" name="email" type="email" required>
  <label for="invite-role">Role</label>
  <select id="invite-role" name="role"><option value="member">member (the inbox: reads, assigns, labels, notes; does not reply to customers)</option><option value="admin">admin (also replies to customers and hands conversations over; keys, approvals)</option><option value="owner">owner (also replies; people and audit)</option></select>
  <p class="muted" id="invite-roles">Who replies to customers from the inbox: owners and admins. A member reads conversations, assigns them, labels them and writes notes.</p>
  <div class="actions"><button type="submit" class="primary">Invite</button></div>
</form>` : ''}`;
  const notice = extra.role && !extra.link ? `${extra.email} is now ${extra.role}.` : undefined;
  send(res, status, layout(ctx.shell('People', { error: extra.error, ...(notice ? { notice } : {}) }), body));
}

export const showPeople = (deps: AppDeps) => (req: Request, res: Response) => renderPeople(deps, req, res, 200);

export const invite = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor } = person(req);
  try {
    const invited = await inviteAs(deps, actor, String(req.params.projectId), field(req, 'email'), field(req, 'role'));
    // PUBLIC_BASE_URL, never the request's Host header (which a client chooses).
    const link = invited.token ? inviteLink(deps.config.publicBaseUrl, invited.token) : undefined;
    await renderPeople(deps, req, res, 200, { link, email: invited.email, role: invited.role });
  } catch (e) {
    if (e instanceof DashboardRefusal && e.status === 400) return renderPeople(deps, req, res, 400, { error: e.message });
    throw e;
  }
};

export const removeMember = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor } = person(req);
  await removeMemberAs(deps, actor, String(req.params.projectId), field(req, 'email'));
  res.redirect(303, projectPath(String(req.params.projectId), actor.email === field(req, 'email')?.trim().toLowerCase() ? '' : '/people?done=removed'));
};

export const decideTemplate = (deps: AppDeps, opts: DashboardOptions = {}) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'templates', ['owner', 'admin'], 'decide templates');
  const t = await decideTemplateAs(deps, actor, project.id, opts.simulatorUrl, { name: field(req, 'name') ?? '', language: field(req, 'language') ?? '', decision: field(req, 'decision') ?? '' });
  res.redirect(303, projectPath(project.id, `/templates?done=${t.status === 'APPROVED' ? 'template_approved' : 'template_rejected'}`));
};

export const showAudit = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'audit', ['owner'], 'read the audit trail');
  const rows = await listAudit(deps, ctx.project.id);
  // What changed, field by field (lib/accounts/audit-diff.ts), not two JSON documents.
  // A time in a value is shown in the pages' one format; null as a dash; past 6 fields, the rest fold away.
  const shown = (v: string) => (v === 'null' ? '—' : ISO_TIME.test(v) ? when(v) : v);
  const item = (c: FieldChange) => html`<li><code>${c.field}</code>: ${c.before === undefined ? html`<span class="muted">(added)</span>` : html`<del>${shown(c.before)}</del>`} → ${c.after === undefined ? html`<span class="muted">(removed)</span>` : html`<ins>${shown(c.after)}</ins>`}</li>`;
  const changes = (before: unknown, after: unknown) => {
    const list = auditChanges(before, after);
    if (!list.length) return html`<span class="muted">no field changed</span>`;
    const [first, rest] = [list.slice(0, 6), list.slice(6)];
    return html`<ul class="changes">${first.map(item)}</ul>${rest.length ? html`<details><summary>${plural(rest.length, 'more field')}</summary><ul class="changes">${rest.map(item)}</ul></details>` : ''}`;
  };
  const body = rows.length
    ? html`<div class="table-wrap"><table class="stack" id="audit"><thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">On</th><th scope="col">What changed</th></tr></thead><tbody>
${rows.map((a) => html`<tr><td data-label="When">${when(a.at)}</td><td data-label="Who">${a.actor}</td><td data-label="Action">${a.action}</td><td data-label="On">${a.subject}</td><td data-label="What changed">${changes(a.before, a.after)}</td></tr>`)}
</tbody></table></div>`
    : html`<p class="muted">Nothing recorded yet.</p>`;
  send(res, 200, layout(ctx.shell('Audit trail'), body));
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const projectRoutes: PageRoute[] = [
  { method: 'get', path: '/', handler: () => async (_req, res) => res.redirect(303, '/dashboard/projects') },
  { method: 'get', path: '/projects', handler: showProjects },
  { method: 'get', path: '/projects/:projectId', handler: () => async (req, res) => res.redirect(303, `/dashboard/projects/${encodeURIComponent(String(req.params.projectId))}/overview`) },
  { method: 'get', path: '/projects/:projectId/overview', handler: showProjectOverview },
  { method: 'get', path: '/projects/:projectId/webhooks', handler: showWebhooks },
  { method: 'get', path: '/projects/:projectId/templates', handler: showTemplates },
  { method: 'post', path: '/projects/:projectId/templates/decision', handler: decideTemplate },
  { method: 'get', path: '/projects/:projectId/people', handler: showPeople },
  { method: 'post', path: '/projects/:projectId/people', handler: invite },
  { method: 'post', path: '/projects/:projectId/people/remove', handler: removeMember },
  { method: 'get', path: '/projects/:projectId/audit', handler: showAudit },
];

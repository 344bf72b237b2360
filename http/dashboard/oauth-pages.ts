/**
 * AI agents in the dashboard: the OAuth consent page (lib/oauth/consent.ts) and the connected agents
 * (lib/oauth/agents.ts).
 *
 * The consent page is reached by a redirect from /authorize, which the agent's own site (or app)
 * started: a cross-site navigation, so the browser does not send the SameSite=Strict session cookie on
 * it, even to a person who is signed in. Its GET therefore resolves the session itself (it comes before
 * the dashboard's "sign in first" rule): with no session, a request the browser marks same-origin
 * (`Sec-Fetch-Site`) goes to the sign-in page, which returns here after signing in (`next`); any
 * other arrival gets a small page whose Continue link leads, from our own origin, to the sign-in page
 * with the same `next`: a signed-in person's cookie rides along and they land on the consent page at
 * once, others sign in first. Approving or denying is a POST of the session (CSRF token, checked
 * before anything), answered by a redirect to the client's registered redirect URI only.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { resolveSession } from '../../lib/accounts/sessions.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { approveConsent, consentExists, consentView, denyConsent, type ConsentView } from '../../lib/oauth/consent.js';
import { connectedAgents, disconnectAgent } from '../../lib/oauth/agents.js';
import { SCOPE_GROUPS, scopeGroup, type ScopeGroup } from '../../lib/oauth/rules.js';
import { html, when } from './html.js';
import { csrfField, layout } from './layout.js';
import { cookie, field, send, SESSION_COOKIE } from './request.js';
import { person } from './context.js';
import { CSP } from './csp.js';
import type { PageRoute } from './page-routes.js';
import { readForm, type FormSchema } from './form-schema.js';

export const CONSENT_PATH = '/dashboard/oauth/consent';

/** The consent form names a checkbox per project and scope: more fields than other forms (still at most 64 KiB). */
const consentForm = express.urlencoded({ extended: false, limit: 64 * 1024, parameterLimit: 5000 });
export function parseConsentForm(req: Request, res: Response, next: NextFunction): void {
  if (req.method !== 'POST' || !req.is('application/x-www-form-urlencoded')) return next();
  consentForm(req, res, (err?: unknown) => {
    if (err) {
      const e = err as { type?: string };
      return next(e.type === 'entity.too.large' ? new DashboardRefusal(413, 'The form is too large.') : new DashboardRefusal(400, 'The form could not be read.'));
    }
    next();
  });
}

/** Each group's heading on the consent page. */
const GROUP_TITLES: Record<ScopeGroup, string> = {
  read: 'Read (and receive events)',
  write: 'Write: change data',
  send: 'Send messages to your customers',
  manage: 'Manage templates, broadcasts and webhooks',
};

/** One project's scopes as a fieldset per group (a legend each, every checkbox inside its label: screen readers and the keyboard reach them all). */
function scopeGroups(view: ConsentView, p: ConsentView['projects'][number]) {
  return SCOPE_GROUPS.map((group) => {
    const scopes = p.offered.filter((s) => scopeGroup(s) === group);
    if (scopes.length === 0) return '';
    return html`<fieldset class="scope-group"><legend>${GROUP_TITLES[group]} on ${p.name}</legend>
      ${scopes.map((s) => {
        const held = p.earlier?.includes(s) === true;
        const note = held ? html` <small class="muted">(granted earlier)</small>` : view.asked.includes(s) ? html` <small class="muted">(${p.earlier ? 'asked for now' : 'asked for'})</small>` : '';
        return html`<label class="check"><input type="checkbox" name="${`scope:${p.id}`}" value="${s}"${p.preselected.includes(s) ? html` checked` : ''}> ${s}${note}</label>`;
      })}
    </fieldset>`;
  });
}

const list = (v: unknown): string[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((s): s is string => typeof s === 'string');

function consentBody(view: ConsentView, csrf: string) {
  const manageable = view.projects.filter((p) => p.canGrant);
  const others = view.projects.filter((p) => !p.canGrant);
  const single = manageable.length === 1;
  return html`<section class="card" aria-labelledby="who">
  ${view.client.documentHost
    ? html`<h2 id="who">${view.client.name || 'An application that gave no name'} <small class="muted">(published by ${view.client.documentHost})</small></h2>
  <p>This application asks to use the API on your behalf. Its name and where it may return are published by <strong>${view.client.documentHost}</strong>, at its client id below: approve only if you trust that site.</p>`
    : html`<h2 id="who">${view.client.name || 'An application that gave no name'} <small class="muted">(name not verified)</small></h2>
  <p>This application asks to use the API on your behalf. Its name is what it registered itself; the service has not verified it.</p>`}
  <dl class="facts">
    <dt>Returns to</dt><dd><strong>${view.returnHost}</strong>${view.returnApp
      ? html`<br><small>An app on this computer that opens <code>${view.returnApp}://</code> links. Any installed app can claim a scheme: approve only if you started this from that app just now.</small>`
      : ''}</dd>
    <dt>Client id</dt><dd><code>${view.client.id}</code></dd>
  </dl>
</section>
<form method="post" action="${CONSENT_PATH}">
  ${csrfField(csrf)}
  <input type="hidden" name="request" value="${view.requestId}">
  ${manageable.length
    ? html`<p>Choose the projects it may reach and what it may do on each. What the application asked for is preselected; you may grant more (sending, for instance) or less.</p>
  ${manageable.some((p) => p.earlier) ? html`<p class="notice" role="status">This application already holds access you granted earlier: it is ticked below and marked <em>granted earlier</em>. Keep it, or untick a scope (or a project) to take it away when you approve.</p>` : ''}
  ${manageable.map((p, i) => html`<fieldset class="card" id="project-${p.id}">
    <legend><label class="check"><input type="checkbox" name="project" value="${p.id}"${single || p.earlier ? html` checked` : ''}> Connect <strong>${p.name}</strong> <small class="muted">${p.id} · you are ${p.role}${p.earlier ? ' · connected earlier' : ''}</small></label></legend>
    ${p.earlier ? html`<p class="muted">Granted earlier on ${p.name}: ${p.earlier.join(', ')}.</p>` : ''}
    ${scopeGroups(view, p)}
    <label class="check"><input type="radio" name="default" value="${p.id}"${i === 0 ? html` checked` : ''}> Default project (a read that names no project acts on it)</label>
  </fieldset>`)}`
    : html`<p class="error" role="alert">You are not an owner or admin of any project, so you cannot connect this application. Ask an owner or admin of the project; you can deny the request.</p>`}
  ${others.length ? html`<p class="muted">Not offered: ${others.map((p, i) => html`${i ? ', ' : ''}${p.name} (you are ${p.role})`)}. Only an owner or admin of a project can connect an agent to it.</p>` : ''}
  <div class="actions">
    ${manageable.length ? html`<button type="submit" name="decision" value="approve" class="primary">Approve</button>` : ''}
    <button type="submit" name="decision" value="deny" class="danger">Deny</button>
  </div>
</form>`;
}

export const showConsent = (deps: AppDeps) => async (req: Request, res: Response) => {
  const requestId = typeof req.query.request === 'string' ? req.query.request : '';
  const here = `${CONSENT_PATH}?request=${encodeURIComponent(requestId)}`;
  const session = await resolveSession(deps, cookie(req, SESSION_COOKIE));
  if (!session) {
    if (!(await consentExists(deps, requestId))) throw new DashboardRefusal(404, 'This authorization request is unknown. Start again from the application.');
    const login = `/dashboard/login?next=${encodeURIComponent(here)}`;
    const site = req.headers['sec-fetch-site'];
    if (site === 'same-origin' || site === 'same-site') return res.redirect(303, login);
    return send(res, 200, layout({ title: 'Connect an application' }, html`<section class="card">
  <p>An application asks to connect to your projects. Continue to sign in (if you are not signed in already) and review what it asks for; nothing is granted until you approve.</p>
  <div class="actions"><a class="button" href="${login}">Continue</a></div>
</section>`));
  }
  req.dashboardSession = session;
  const view = await consentView(deps, session.account.id, requestId);
  // The answer's redirect leads to the client's origin: the page's form-action must allow it (browsers check redirects too).
  if (view.returnOrigin) res.setHeader('Content-Security-Policy', CSP.replace("form-action 'self'", `form-action 'self' ${view.returnOrigin}`));
  send(res, 200, layout({ title: 'Connect an application', person: { email: session.account.email, csrf: session.csrfToken } }, consentBody(view, session.csrfToken)));
};

/** The consent form's answer (its projects and scopes are checkbox lists, checked by lib/oauth/consent.ts). */
const CHOOSE = 'Choose Approve or Deny. Nothing was stored.';
const CONSENT_FORM = {
  request: {},
  decision: { required: CHOOSE, oneOf: { values: ['approve', 'deny'], message: CHOOSE } },
} satisfies FormSchema;

export const answerConsent = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { session } = person(req);
  const form = readForm(req, CONSENT_FORM);
  const requestId = form.request ?? '';
  const decision = form.decision;
  let location: string;
  if (decision === 'deny') {
    location = await denyConsent(deps, session.account.id, requestId);
  } else {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const projects = list(body.project);
    const scopes = Object.fromEntries(projects.map((p) => [p.trim().toLowerCase(), list(body[`scope:${p}`])]));
    location = await approveConsent(deps, { accountId: session.account.id, email: session.account.email }, requestId, {
      projects,
      scopes,
      defaultProject: field(req, 'default'),
    });
  }
  res.redirect(303, location);
};

const NOTICES: Record<string, string> = { disconnected: 'Agent disconnected: its tokens no longer work.' };

export const showAgents = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { session } = person(req);
  const agents = await connectedAgents(deps, session.account.id);
  const notice = typeof req.query.done === 'string' ? NOTICES[req.query.done] : undefined;
  const body = agents.length
    ? html`<p class="muted">Agents you connected, and those that reach a project where you are an owner or admin. Names are what each application registered; they are not verified.</p>
${agents.map((a) => html`<article class="card" id="agent-${a.id}">
  <h2>${a.name} <small class="muted">${a.clientId ? '(name not verified)' : '(made by an operator)'}</small></h2>
  <dl class="facts">
    <dt>Connected by</dt><dd>${a.grantedBy ?? 'an operator'}</dd>
    <dt>Since</dt><dd>${when(a.createdAt)}</dd>
    <dt>Last used</dt><dd>${a.lastUsedAt ? when(a.lastUsedAt) : 'never'}</dd>
  </dl>
  <div class="table-wrap"><table class="stack"><thead><tr><th scope="col">Project</th><th scope="col">Scopes</th></tr></thead><tbody>
  ${a.projects.map((p) => html`<tr><td data-label="Project">${p.name} <small class="muted">${p.id}${p.isDefault ? ' · default' : ''}</small></td><td data-label="Scopes">${p.scopes.join(', ')}</td></tr>`)}
  </tbody></table></div>
  <form method="post" action="/dashboard/agents/${a.id}/disconnect" class="inline" data-confirm="Disconnect “${a.name}”? Its tokens stop working at once; it would have to ask again.">
    ${csrfField(session.csrfToken)}<button type="submit" class="danger" aria-label="Disconnect ${a.name}">Disconnect</button>
  </form>
</article>`)}`
    : html`<p class="muted">No connected agents. An AI agent connects through OAuth: it sends you to a consent page here.</p>`;
  send(res, 200, layout({ title: 'Connected agents', person: { email: session.account.email, csrf: session.csrfToken }, notice }, body));
};

export const disconnect = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { session } = person(req);
  await disconnectAgent(deps, { accountId: session.account.id, email: session.account.email }, String(req.params.connectionId));
  res.redirect(303, '/dashboard/agents?done=disconnected');
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const oauthRoutes: PageRoute[] = [
  // An agent's authorization request arrives here from /authorize by a cross-site redirect, without the
  // session cookie: the page resolves the session itself.
  { method: 'get', path: '/oauth/consent', handler: showConsent, stage: 'public' },
  { method: 'post', path: '/oauth/consent', handler: answerConsent, form: CONSENT_FORM },
  { method: 'get', path: '/agents', handler: showAgents },
  { method: 'post', path: '/agents/:connectionId/disconnect', handler: disconnect },
];

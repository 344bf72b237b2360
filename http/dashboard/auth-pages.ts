/** Sign-in (with its own double-submit token: there is no session yet), the one-time setup link, sign-out. */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { randomToken, safeEqual } from '../../lib/platform/secrets.js';
import { signIn, accountForSetup, completeSetup } from '../../lib/accounts/accounts.js';
import { acceptInvite, inviteForToken, INVALID_INVITE } from '../../lib/accounts/invites.js';
import { endSession, resolveSession, startSession, SESSION_TTL_MS } from '../../lib/accounts/sessions.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { MIN_PASSWORD_LENGTH } from '../../lib/accounts/passwords.js';
import { html } from './html.js';
import { layout } from './layout.js';
import { clearCookie, cookie, field, LOGIN_COOKIE, send, SESSION_COOKIE, setCookie } from './request.js';
import type { PageRoute } from './page-routes.js';

/**
 * Where to go after signing in (`next`): only a path of the dashboard itself (`/dashboard/…`, no
 * scheme, host, `//` or backslash), so the sign-in page can never send anyone elsewhere; else undefined.
 */
export function safeNext(raw: unknown): string | undefined {
  if (typeof raw !== 'string' || raw.length > 2000 || !raw.startsWith('/dashboard/') || /[\\\u0000-\u001f\u007f]/.test(raw)) return undefined;
  let url: URL;
  try {
    url = new URL(raw, 'http://dashboard.invalid');
  } catch {
    return undefined;
  }
  if (url.origin !== 'http://dashboard.invalid' || !url.pathname.startsWith('/dashboard/')) return undefined;
  return url.pathname + url.search;
}

function loginForm(req: Request, res: Response, status: number, error?: string, email = '', next?: string): void {
  const token = randomToken(32);
  setCookie(req, res, LOGIN_COOKIE, token, 3600);
  send(res, status, layout({ title: 'Sign in', error }, html`
<form method="post" action="/dashboard/login" class="card">
  <input type="hidden" name="_csrf" value="${token}">
  ${next ? html`<input type="hidden" name="next" value="${next}">` : ''}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${email}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>`));
}

async function beginSession(deps: AppDeps, req: Request, res: Response, accountId: string, next?: string): Promise<void> {
  const { token } = await startSession(deps, accountId);
  clearCookie(req, res, LOGIN_COOKIE);
  setCookie(req, res, SESSION_COOKIE, token, SESSION_TTL_MS / 1000);
  res.redirect(303, next ?? '/dashboard');
}

export function showLogin(deps: AppDeps) {
  return async (req: Request, res: Response) => {
    const next = safeNext(req.query.next);
    // Already signed in: straight to the page asked for (an agent's consent page), else the projects.
    if (await resolveSession(deps, cookie(req, SESSION_COOKIE))) return res.redirect(303, next ?? '/dashboard/projects');
    loginForm(req, res, 200, undefined, '', next);
  };
}

export function submitLogin(deps: AppDeps) {
  return async (req: Request, res: Response) => {
    const presented = field(req, '_csrf') ?? '';
    const expected = cookie(req, LOGIN_COOKIE) ?? '';
    const next = safeNext(field(req, 'next'));
    if (!presented || !expected || !safeEqual(presented, expected)) {
      return loginForm(req, res, 403, 'This sign-in form has expired or did not come from this site. Try again.', '', next);
    }
    const email = field(req, 'email') ?? '';
    try {
      const account = await signIn(deps, email, field(req, 'password'), req.ip ?? 'unknown');
      await beginSession(deps, req, res, account.id, next);
    } catch (e) {
      if (!(e instanceof DashboardRefusal)) throw e;
      if (e.retryAfterSeconds) res.setHeader('Retry-After', String(e.retryAfterSeconds));
      loginForm(req, res, e.status, e.message, email.slice(0, 320), next);
    }
  };
}

function setupForm(res: Response, status: number, token: string, email: string, error?: string): void {
  send(res, status, layout({ title: 'Choose your password', error }, html`
<form method="post" action="/dashboard/setup" class="card">
  <input type="hidden" name="token" value="${token}">
  <p>Signing in as <strong>${email}</strong>. This link works once.</p>
  <input type="hidden" name="email" value="${email}" autocomplete="username">
  <label for="password">New password (at least ${MIN_PASSWORD_LENGTH} characters)</label>
  <input id="password" name="password" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD_LENGTH}" required>
  <label for="confirm">Repeat the password</label>
  <input id="confirm" name="confirm" type="password" autocomplete="new-password" required>
  <div class="actions"><button type="submit" class="primary">Set password and sign in</button></div>
</form>`));
}

const invalidLink = 'This setup link is invalid, used or expired. Ask an owner for a new invitation.';

export function showSetup(deps: AppDeps) {
  return async (req: Request, res: Response) => {
    const token = typeof req.query.token === 'string' ? req.query.token : '';
    const account = await accountForSetup(deps, token);
    if (!account) throw new DashboardRefusal(404, invalidLink);
    setupForm(res, 200, token, account.email);
  };
}

// The link's token (carried in the form) is itself the form's secret: a page elsewhere cannot know it.
export function submitSetup(deps: AppDeps) {
  return async (req: Request, res: Response) => {
    const token = field(req, 'token') ?? '';
    const account = await accountForSetup(deps, token);
    if (!account) throw new DashboardRefusal(404, invalidLink);
    try {
      await completeSetup(deps, token, field(req, 'password'), field(req, 'confirm'));
    } catch (e) {
      if (e instanceof DashboardRefusal && e.status === 400) return setupForm(res, 400, token, account.email, e.message);
      throw e;
    }
    await beginSession(deps, req, res, account.id);
  };
}

// The invitation page is the same whether the email has an account or not: it never looks.
function inviteForm(res: Response, status: number, token: string, invite: { email: string; role: string; projectName: string }, error?: string): void {
  send(res, status, layout({ title: 'Accept the invitation', error }, html`
<form method="post" action="/dashboard/invite" class="card">
  <input type="hidden" name="token" value="${token}">
  <p>You are invited to <strong>${invite.projectName}</strong> as <strong>${invite.role}</strong>, for <strong>${invite.email}</strong>. This link works once.</p>
  <input type="hidden" name="email" value="${invite.email}" autocomplete="username">
  <label for="password">Your dashboard password; if you have no account yet, choose one (at least ${MIN_PASSWORD_LENGTH} characters)</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <label for="confirm">New to the dashboard: repeat the password you chose</label>
  <input id="confirm" name="confirm" type="password" autocomplete="new-password">
  <div class="actions"><button type="submit" class="primary">Accept and sign in</button></div>
</form>`));
}

export function showInvite(deps: AppDeps) {
  return async (req: Request, res: Response) => {
    const token = typeof req.query.token === 'string' ? req.query.token : '';
    const invite = await inviteForToken(deps, token);
    if (!invite) throw new DashboardRefusal(404, INVALID_INVITE);
    inviteForm(res, 200, token, invite);
  };
}

// As with the setup link, the token carried in the form is the form's secret.
export function submitInvite(deps: AppDeps) {
  return async (req: Request, res: Response) => {
    const token = field(req, 'token') ?? '';
    const invite = await inviteForToken(deps, token);
    if (!invite) throw new DashboardRefusal(404, INVALID_INVITE);
    let account;
    try {
      account = await acceptInvite(deps, token, field(req, 'password'), field(req, 'confirm'), req.ip ?? 'unknown');
    } catch (e) {
      if (!(e instanceof DashboardRefusal) || e.status === 404) throw e;
      if (e.retryAfterSeconds) res.setHeader('Retry-After', String(e.retryAfterSeconds));
      return inviteForm(res, e.status, token, invite, e.message);
    }
    await beginSession(deps, req, res, account.id);
  };
}

export function submitLogout(deps: AppDeps) {
  return async (req: Request, res: Response) => {
    if (req.dashboardSession) await endSession(deps, req.dashboardSession.id);
    clearCookie(req, res, SESSION_COOKIE);
    res.redirect(303, '/dashboard/login');
  };
}

/** This module's pages under /dashboard (router.ts mounts them). */
export const authRoutes: PageRoute[] = [
  // The token rides in the query string and the form, never the path: paths are logged, queries are not.
  { method: 'get', path: '/login', handler: showLogin, stage: 'public' },
  { method: 'post', path: '/login', handler: submitLogin, stage: 'public' },
  { method: 'get', path: '/setup', handler: showSetup, stage: 'public' },
  { method: 'post', path: '/setup', handler: submitSetup, stage: 'public' },
  { method: 'get', path: '/invite', handler: showInvite, stage: 'public' },
  { method: 'post', path: '/invite', handler: submitInvite, stage: 'public' },
  { method: 'post', path: '/logout', handler: submitLogout },
];

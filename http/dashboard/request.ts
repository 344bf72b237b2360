/**
 * The dashboard's HTTP plumbing: cookies (session and the sign-in form's token), the form parser
 * with its size limit, and the wrapper that turns a page function's result or refusal into HTML.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { ApiError } from '../../lib/platform/errors.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import type { ActiveSession } from '../../lib/accounts/sessions.js';
import { html, type Html } from './html.js';
import { layout, type Shell } from './layout.js';

export const SESSION_COOKIE = 'dashboard_session';
export const LOGIN_COOKIE = 'dashboard_login';
/** Forms are small (a name, a list of scopes); anything larger is refused before parsing. */
export const FORM_LIMIT_BYTES = 16 * 1024;

declare module 'express-serve-static-core' {
  interface Request {
    dashboardSession?: ActiveSession;
  }
}

export function cookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** HttpOnly, SameSite=Strict, scoped to /dashboard; Secure when the request came over HTTPS (trust proxy decides). */
export function setCookie(req: Request, res: Response, name: string, value: string, maxAgeSeconds: number): void {
  const attrs = [`${name}=${encodeURIComponent(value)}`, 'Path=/dashboard', 'HttpOnly', 'SameSite=Strict', `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`];
  if (req.secure) attrs.push('Secure');
  res.append('Set-Cookie', attrs.join('; '));
}

export function clearCookie(req: Request, res: Response, name: string): void {
  setCookie(req, res, name, '', 0);
}

const urlencoded = express.urlencoded({ extended: false, limit: FORM_LIMIT_BYTES, parameterLimit: 100 });

/** Parses an urlencoded form (others are refused: 415), at most FORM_LIMIT_BYTES (413). */
export function parseForm(req: Request, res: Response, next: NextFunction): void {
  if (req.method !== 'POST') return next();
  if (!req.is('application/x-www-form-urlencoded')) return next(new DashboardRefusal(400, 'Send the form as the page does (application/x-www-form-urlencoded).'));
  urlencoded(req, res, (err?: unknown) => {
    if (err) {
      const e = err as { type?: string };
      return next(e.type === 'entity.too.large' ? new DashboardRefusal(413, 'The form is too large.') : new DashboardRefusal(400, 'The form could not be read.'));
    }
    next();
  });
}

/**
 * The console's data forms (a table row of many columns, its edit with the values it had, a secret
 * of up to BOT_SECRET_MAX_BYTES): a larger parser, mounted before parseForm on those paths (which
 * then finds the body read). The domain's own limits (a secret's size, a table's quota) still apply.
 */
export const CONSOLE_FORM_LIMIT_BYTES = 256 * 1024;
const consoleUrlencoded = express.urlencoded({ extended: false, limit: CONSOLE_FORM_LIMIT_BYTES, parameterLimit: 2000 });

export function parseConsoleForm(req: Request, res: Response, next: NextFunction): void {
  if (req.method !== 'POST' || !req.is('application/x-www-form-urlencoded')) return next();
  consoleUrlencoded(req, res, (err?: unknown) => {
    if (err) {
      const e = err as { type?: string };
      return next(e.type === 'entity.too.large' || e.type === 'parameters.too.many' ? new DashboardRefusal(413, 'The form is too large; nothing was changed.') : new DashboardRefusal(400, 'The form could not be read.'));
    }
    next();
  });
}

export function field(req: Request, name: string): string | undefined {
  const v = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof v === 'string' ? v : undefined;
}

export function send(res: Response, status: number, page: Html): void {
  res.status(status).type('html').send(page.value);
}

/** The error page: the refusal's status and message; anything unexpected is a 500 with no detail. */
export function errorPage(err: unknown, req: Request, res: Response, log: (msg: string, meta: object) => void): void {
  let status = 500;
  let message = 'Something went wrong on our side. Nothing you did caused it; try again.';
  if (err instanceof DashboardRefusal) {
    status = err.status;
    message = err.message;
    if (err.retryAfterSeconds) res.setHeader('Retry-After', String(err.retryAfterSeconds));
  } else if (err instanceof ApiError) {
    status = err.status;
    message = err.message;
  } else {
    log('dashboard: unexpected error', { error: err instanceof Error ? err.stack : String(err), path: req.path });
  }
  const session = req.dashboardSession;
  const shell: Shell = {
    title: status === 404 ? 'Not found' : status === 401 ? 'Sign in again' : status >= 500 && !(err instanceof DashboardRefusal) ? 'Error' : 'Not done',
    person: session ? { email: session.account.email, csrf: session.csrfToken } : undefined,
    error: message,
  };
  const back = session ? html`<p><a href="/dashboard">Back to your projects</a></p>` : html`<p><a href="/dashboard/login">Sign in</a></p>`;
  send(res, status, layout(shell, back));
}

export type PageHandler = (req: Request, res: Response) => Promise<void>;

/** Async page handlers reach the router's error page. */
export const page = (fn: PageHandler) => (req: Request, res: Response, next: NextFunction) => fn(req, res).catch(next);

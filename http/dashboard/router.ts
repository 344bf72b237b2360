/**
 * The dashboard under /dashboard: server-rendered pages and HTML forms, outside the three API
 * contracts. Each page module declares its pages (page-routes.ts); this mounts them in order:
 * security headers for pages, static assets, the larger parsers of the consent and console forms,
 * the streamed upload, the form parser (size-limited), the public pages (sign-in, setup, an
 * invitation, the consent page), then the session (else: sign in) and the CSRF check on every
 * POST, then the other pages; refusals and errors become an HTML page with the status.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { AppDeps } from '../app-deps.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';
import { resolveSession } from '../../lib/accounts/sessions.js';
import { csrfMatches } from '../../lib/accounts/csrf.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { cookie, errorPage, page, parseConsoleForm, parseForm, SESSION_COOKIE, clearCookie } from './request.js';
import { authRoutes } from './auth-pages.js';
import { projectRoutes } from './project-pages.js';
import { keyRoutes } from './key-pages.js';
import { broadcastRoutes } from './broadcast-pages.js';
import { customerRoutes } from './customer-pages.js';
import { inboxRoutes } from './inbox-pages.js';
import { inboxLiveRoutes } from './inbox-live.js';
import { groupRoutes } from './group-pages.js';
import { oauthRoutes, parseConsentForm } from './oauth-pages.js';
import { databaseRoutes } from './database-pages.js';
import { tableRoutes } from './table-pages.js';
import { secretRoutes } from './secret-pages.js';
import { logRoutes } from './log-pages.js';
import { billingRoutes } from './billing-pages.js';
import { fileRoutes } from './file-pages.js';
import { flowRoutes } from './flow-pages.js';
import { botRoutes } from './bot-pages.js';
import { scheduleRoutes } from './schedule-pages.js';
import type { DashboardOptions, PageRoute } from './page-routes.js';
import { CSP } from './csp.js';

export type { DashboardOptions } from './page-routes.js';

/**
 * Every page, as each module declares it. Within a module its order is kept (a fixed segment
 * before a parameter in the same place: `conversations/list` before `conversations/:conversationId`).
 */
const ROUTES: PageRoute[] = [
  ...authRoutes, ...oauthRoutes, ...projectRoutes, ...keyRoutes, ...broadcastRoutes, ...customerRoutes, ...inboxLiveRoutes, ...inboxRoutes, ...groupRoutes,
  ...databaseRoutes, ...tableRoutes, ...secretRoutes, ...logRoutes, ...billingRoutes, ...fileRoutes, ...flowRoutes,
  ...botRoutes, ...scheduleRoutes,
];

const asset = (name: string) => readFileSync(path.join(PROJECT_ROOT, 'http', 'dashboard', name), 'utf8');
/** The libraries the pages load (vendor/, copied from their npm packages; the versions in vendor/README.md). */
const VENDOR = [['htmx.min.js', asset('vendor/htmx.min.js')], ['htmx-ext-sse.min.js', asset('vendor/htmx-ext-sse.min.js')]] as const;

export function dashboardRouter(deps: AppDeps, opts: DashboardOptions = {}): Router {
  const css = asset('dashboard.css');
  const js = asset('dashboard.js');
  const r = express.Router();
  const mount = (stage: PageRoute['stage']) => {
    for (const route of ROUTES.filter((x) => x.stage === stage)) r[route.method](route.path, page(route.handler(deps, opts)));
  };
  r.use((_req, res, next) => {
    res.setHeader('Content-Security-Policy', CSP);
    next();
  });
  r.get('/assets/dashboard.css', (_req, res) => void res.type('text/css').setHeader('Cache-Control', 'public, max-age=300').send(css));
  r.get('/assets/dashboard.js', (_req, res) => void res.type('text/javascript').setHeader('Cache-Control', 'public, max-age=300').send(js));
  // htmx and its SSE extension, served from here (the CSP allows only this origin's script): http/dashboard/vendor/README.md.
  for (const [name, text] of VENDOR) r.get(`/assets/${name}`, (_req, res) => void res.type('text/javascript').setHeader('Cache-Control', 'public, max-age=86400').send(text));
  // The consent form carries a checkbox per project and scope: its own, larger, parser (then parseForm finds it read).
  r.use('/oauth/consent', parseConsentForm);
  // The console's data forms (rows, secrets) are larger: their own parser (http/dashboard/request.ts).
  r.use(['/projects/:projectId/database', '/projects/:projectId/secrets', '/projects/:projectId/conversations'], parseConsoleForm);
  mount('stream');
  r.use(parseForm);
  mount('public');

  // Everything below needs a live session; a POST also needs the session's CSRF token.
  r.use((req: Request, _res: Response, next: NextFunction) => {
    resolveSession(deps, cookie(req, SESSION_COOKIE)).then((s) => {
      req.dashboardSession = s;
      next();
    }, next);
  });
  r.use((req: Request, res: Response, next: NextFunction) => {
    if (!req.dashboardSession) {
      if (cookie(req, SESSION_COOKIE)) clearCookie(req, res, SESSION_COOKIE);
      if (req.method === 'GET') return res.redirect(303, '/dashboard/login');
      return next(new DashboardRefusal(401, 'Your session has ended. Sign in again; nothing was changed.'));
    }
    if (req.method === 'POST' && !csrfMatches(req.dashboardSession, (req.body as Record<string, unknown> | undefined)?._csrf)) {
      return next(new DashboardRefusal(403, 'This form could not be verified (its security token is missing or out of date). Reload the page and try again; nothing was changed.'));
    }
    next();
  });
  mount(undefined);
  r.use((_req, _res, next) => next(new DashboardRefusal(404, 'There is no such page.')));
  r.use((err: unknown, req: Request, res: Response, _next: NextFunction) => errorPage(err, req, res, (m, meta) => deps.logger.error(m, meta)));
  return r;
}

/**
 * The dashboard under /dashboard: server-rendered pages and HTML forms, outside the three API
 * contracts. Order: security headers for pages, static assets, the form parser (size-limited),
 * the sign-in and setup pages, then the session (else: sign in) and the CSRF check on every
 * POST, then the pages; refusals and errors become an HTML page with the status.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { AppDeps } from '../app-deps.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';
import { resolveSession } from '../../lib/dashboard/sessions.js';
import { csrfMatches } from '../../lib/dashboard/csrf.js';
import { DashboardRefusal } from '../../lib/dashboard/refusal.js';
import { cookie, errorPage, page, parseConsoleForm, parseForm, SESSION_COOKIE, clearCookie } from './request.js';
import { showLogin, submitLogin, showSetup, submitSetup, showInvite, submitInvite, submitLogout } from './auth-pages.js';
import { showProjects, showProjectOverview, showWebhooks, showTemplates, decideTemplate, showPeople, invite, removeMember, showAudit, type DashboardOptions } from './project-pages.js';
import { showKeys, createKey, rotateKey, revokeKey, updateScopes } from './key-pages.js';
import { showBroadcasts, showBroadcast, broadcastProgress, approve, cancel, showApprove, testSend } from './broadcast-pages.js';
import { showContacts } from './customer-pages.js';
import { showConversations, showConversation, conversationLive, conversationList, submitHandover, submitThread, submitReply, submitAssign, submitLabels, submitNote, submitCannedReply } from './inbox-pages.js';
import { answerConsent, disconnect, parseConsentForm, showAgents, showConsent } from './oauth-pages.js';
import { showDatabase, submitCopyPreview, submitCreateTable, submitDdl } from './database-pages.js';
import { exportCsv, showEdit, showTable, submitDelete, submitInsert, submitUpdate } from './table-pages.js';
import { showSecrets, submitDeleteSecret, submitSecret } from './secret-pages.js';
import { showLogs, submitRedeliver } from './log-pages.js';
import { exportBilling, showBilling } from './billing-pages.js';
import { downloadFile, showFiles, submitDeleteFile, submitDeleteMedia, submitFileAsHeaderSample, submitFileAsMedia, submitUpload } from './file-pages.js';
import { showFlows, showFlow, submitPublish } from './flow-pages.js';
import { botLogTail, showBot, showBotFiles, showBotLog, submitPreview, submitRollback } from './bot-pages.js';
import { showSchedule, showSchedules, submitPause, submitResume, submitRunNow } from './schedule-pages.js';
import { CSP } from './csp.js';

export type { DashboardOptions } from './project-pages.js';

const asset = (name: string) => readFileSync(path.join(PROJECT_ROOT, 'http', 'dashboard', name), 'utf8');


export function dashboardRouter(deps: AppDeps, opts: DashboardOptions = {}): Router {
  const css = asset('dashboard.css');
  const js = asset('dashboard.js');
  const r = express.Router();
  r.use((_req, res, next) => {
    res.setHeader('Content-Security-Policy', CSP);
    next();
  });
  r.get('/assets/dashboard.css', (_req, res) => void res.type('text/css').setHeader('Cache-Control', 'public, max-age=300').send(css));
  r.get('/assets/dashboard.js', (_req, res) => void res.type('text/javascript').setHeader('Cache-Control', 'public, max-age=300').send(js));
  // The consent form carries a checkbox per project and scope: its own, larger, parser (then parseForm finds it read).
  r.use('/oauth/consent', parseConsentForm);
  // The console's data forms (rows, secrets) are larger: their own parser (http/dashboard/request.ts).
  r.use(['/projects/:projectId/database', '/projects/:projectId/secrets', '/projects/:projectId/conversations'], parseConsoleForm);
  // A file upload is multipart and streamed: its page reads the session and checks the CSRF field itself (http/dashboard/file-pages.ts).
  r.post('/projects/:projectId/files/upload', page(submitUpload(deps)));
  r.use(parseForm);

  r.get('/login', page(showLogin(deps)));
  r.post('/login', page(submitLogin(deps)));
  // The token rides in the query string and the form, never the path: paths are logged, queries are not.
  r.get('/setup', page(showSetup(deps)));
  r.post('/setup', page(submitSetup(deps)));
  r.get('/invite', page(showInvite(deps)));
  r.post('/invite', page(submitInvite(deps)));
  // An agent's authorization request arrives here from /authorize by a cross-site redirect, without the
  // session cookie: the page resolves the session itself (http/dashboard/oauth-pages.ts).
  r.get('/oauth/consent', page(showConsent(deps)));

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

  r.get('/', (_req, res) => res.redirect(303, '/dashboard/projects'));
  r.post('/logout', page(submitLogout(deps)));
  r.get('/projects', page(showProjects(deps, opts)));
  r.post('/oauth/consent', page(answerConsent(deps)));
  r.get('/agents', page(showAgents(deps)));
  r.post('/agents/:connectionId/disconnect', page(disconnect(deps)));
  r.get('/projects/:projectId', (req, res) => res.redirect(303, `/dashboard/projects/${encodeURIComponent(String(req.params.projectId))}/broadcasts`));
  r.get('/projects/:projectId/overview', page(showProjectOverview(deps)));
  r.get('/projects/:projectId/keys', page(showKeys(deps)));
  r.post('/projects/:projectId/keys', page(createKey(deps)));
  r.post('/projects/:projectId/keys/:keyId/rotate', page(rotateKey(deps)));
  r.post('/projects/:projectId/keys/:keyId/revoke', page(revokeKey(deps)));
  r.post('/projects/:projectId/keys/:keyId/scopes', page(updateScopes(deps)));
  r.get('/projects/:projectId/broadcasts', page(showBroadcasts(deps)));
  r.get('/projects/:projectId/broadcasts/:broadcastId', page(showBroadcast(deps)));
  r.get('/projects/:projectId/broadcasts/:broadcastId/progress', page(broadcastProgress(deps)));
  r.get('/projects/:projectId/contacts', page(showContacts(deps)));
  r.get('/projects/:projectId/conversations', page(showConversations(deps)));
  // The inbox (issue 60): the list's live rows and the canned replies come before the conversation's id.
  r.get('/projects/:projectId/conversations/list', page(conversationList(deps)));
  r.post('/projects/:projectId/conversations/canned-replies', page(submitCannedReply(deps)));
  r.get('/projects/:projectId/conversations/:conversationId', page(showConversation(deps)));
  r.post('/projects/:projectId/conversations/:conversationId/assign', page(submitAssign(deps)));
  r.post('/projects/:projectId/conversations/:conversationId/labels', page(submitLabels(deps)));
  r.post('/projects/:projectId/conversations/:conversationId/notes', page(submitNote(deps)));
  r.get('/projects/:projectId/conversations/:conversationId/live', page(conversationLive(deps)));
  r.post('/projects/:projectId/conversations/:conversationId/reply', page(submitReply(deps)));
  r.post('/projects/:projectId/conversations/:conversationId/handover', page(submitHandover(deps)));
  r.post('/projects/:projectId/conversations/:conversationId/thread', page(submitThread(deps)));
  r.get('/projects/:projectId/broadcasts/:broadcastId/approve', page(showApprove(deps)));
  r.post('/projects/:projectId/broadcasts/:broadcastId/approve', page(approve(deps)));
  r.post('/projects/:projectId/broadcasts/:broadcastId/test-send', page(testSend(deps)));
  r.post('/projects/:projectId/broadcasts/:broadcastId/cancel', page(cancel(deps)));
  r.get('/projects/:projectId/webhooks', page(showWebhooks(deps)));
  r.get('/projects/:projectId/templates', page(showTemplates(deps, opts)));
  r.post('/projects/:projectId/templates/decision', page(decideTemplate(deps, opts)));
  r.get('/projects/:projectId/people', page(showPeople(deps)));
  r.post('/projects/:projectId/people', page(invite(deps)));
  r.post('/projects/:projectId/people/remove', page(removeMember(deps)));
  r.get('/projects/:projectId/audit', page(showAudit(deps)));
  // The console (issue 47): database, secrets, logs, billing.
  r.get('/projects/:projectId/database', page(showDatabase(deps)));
  r.post('/projects/:projectId/database/tables', page(submitCreateTable(deps)));
  r.post('/projects/:projectId/database/ddl', page(submitDdl(deps)));
  r.post('/projects/:projectId/database/copy-preview', page(submitCopyPreview(deps)));
  r.get('/projects/:projectId/database/:schema/:table', page(showTable(deps)));
  r.get('/projects/:projectId/database/:schema/:table/csv', page(exportCsv(deps)));
  r.get('/projects/:projectId/database/:schema/:table/edit', page(showEdit(deps)));
  r.post('/projects/:projectId/database/:schema/:table/rows', page(submitInsert(deps)));
  r.post('/projects/:projectId/database/:schema/:table/update', page(submitUpdate(deps)));
  r.post('/projects/:projectId/database/:schema/:table/delete', page(submitDelete(deps)));
  r.get('/projects/:projectId/secrets', page(showSecrets(deps)));
  r.post('/projects/:projectId/secrets', page(submitSecret(deps)));
  r.post('/projects/:projectId/secrets/:name/delete', page(submitDeleteSecret(deps)));
  r.get('/projects/:projectId/logs', page(showLogs(deps)));
  r.post('/projects/:projectId/logs/deliveries/:deliveryId/redeliver', page(submitRedeliver(deps)));
  r.get('/projects/:projectId/billing', page(showBilling(deps)));
  r.get('/projects/:projectId/billing/csv', page(exportBilling(deps)));
  r.get('/projects/:projectId/files', page(showFiles(deps)));
  r.get('/projects/:projectId/files/:name/download', page(downloadFile(deps)));
  r.post('/projects/:projectId/files/:name/delete', page(submitDeleteFile(deps)));
  r.post('/projects/:projectId/files/:name/media', page(submitFileAsMedia(deps)));
  r.post('/projects/:projectId/files/:name/header-sample', page(submitFileAsHeaderSample(deps)));
  r.post('/projects/:projectId/files/media/:slug/delete', page(submitDeleteMedia(deps)));
  r.get('/projects/:projectId/flows', page(showFlows(deps)));
  r.get('/projects/:projectId/flows/:name', page(showFlow(deps)));
  r.post('/projects/:projectId/flows/:name/publish', page(submitPublish(deps)));

  // The bot and its scheduled tasks (issue 47, items 2 and 5).
  r.get('/projects/:projectId/bot', page(showBot(deps)));
  r.post('/projects/:projectId/bot/preview', page(submitPreview(deps)));
  r.post('/projects/:projectId/bot/deployments/:deploymentId/rollback', page(submitRollback(deps)));
  r.get('/projects/:projectId/bot/files', page(showBotFiles(deps)));
  r.get('/projects/:projectId/bot/log', page(showBotLog(deps)));
  r.get('/projects/:projectId/bot/log/tail', page(botLogTail(deps)));
  r.get('/projects/:projectId/schedules', page(showSchedules(deps)));
  r.get('/projects/:projectId/schedules/:name', page(showSchedule(deps)));
  r.post('/projects/:projectId/schedules/:name/pause', page(submitPause(deps)));
  r.post('/projects/:projectId/schedules/:name/resume', page(submitResume(deps)));
  r.post('/projects/:projectId/schedules/:name/run', page(submitRunNow(deps)));
  r.use((_req, _res, next) => next(new DashboardRefusal(404, 'There is no such page.')));
  r.use((err: unknown, req: Request, res: Response, _next: NextFunction) => errorPage(err, req, res, (m, meta) => deps.logger.error(m, meta)));
  return r;
}

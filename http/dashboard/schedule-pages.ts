/**
 * The console's Scheduled tasks pages (issue 47, item 5), on lib/bot/schedules.ts (the operator
 * API's functions: adminListSchedules, adminPauseSchedule, adminResumeSchedule, adminRunSchedule,
 * adminListScheduleRuns): each schedule of the active release with its next and last runs; owners
 * and admins pause, resume and run one now (each audited by lib/bot/schedules.ts in its
 * transaction, sent once per form); a schedule's runs with outcome and error, newest first in
 * keyset pages, an error linked to the author's file and line.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage } from '../../lib/accounts/roles.js';
import { ApiError } from '../../lib/platform/errors.js';
import { getSchedule, listRuns, listSchedules, runNow, setPaused, type RunView, type ScheduleView } from '../../lib/bot/schedules.js';
import { html, type Html, when } from './html.js';
import { csrfField, layout, projectPath } from './layout.js';
import { field, send } from './request.js';
import { projectContext } from './context.js';
import { changeOnce, onceField } from './console-kit.js';
import { fileHref } from './bot-pages.js';
import { projectPages } from './page-routes.js';

const MANAGERS = ['owner', 'admin'] as const;
const RUNS_PAGE = 20;

const schedulesPath = (projectId: string, rest = '') => projectPath(projectId, `/schedules${rest}`);
const schedulePath = (projectId: string, name: string, rest = '') => schedulesPath(projectId, `/${encodeURIComponent(name)}${rest}`);

/** Where a schedule is declared (`src/bot.ts:5`), linked to that line of production. */
function declaredAt(projectId: string, source: string | null): Html {
  const m = source ? /^(.+):(\d+)$/.exec(source) : null;
  if (!m) return html`${source ?? '—'}`;
  return html`<a href="${fileHref(projectId, { tree: 'production' }, m[1], Number(m[2]))}">${source}</a>`;
}

function runError(projectId: string, r: RunView): Html {
  if (!r.error) return html``;
  const at = r.error.file && r.error.line ? html`<br><a class="place" href="${fileHref(projectId, { tree: 'production' }, r.error.file, r.error.line)}">${r.error.file} line ${r.error.line}</a>` : '';
  return html`<code class="log-line error-text">${r.error.message}</code>${at}`;
}

function outcome(r: RunView): Html {
  return html`<span class="outcome outcome-${/^[a-z_]+$/.test(r.outcome) ? r.outcome : 'other'}">${r.outcome}</span>`;
}

/** Pause or resume, and run now; `fromOne`: the forms are on the schedule's own page, which the person goes back to. */
function actions(projectId: string, csrf: string, s: ScheduleView, fromOne = false): Html {
  const form = (what: 'pause' | 'resume' | 'run', label: string, extra: Html | string = '') =>
    html`<form method="post" action="${schedulePath(projectId, s.name, `/${what}`)}" class="inline"${extra}>${csrfField(csrf)}${onceField()}${fromOne ? html`<input type="hidden" name="back" value="schedule">` : ''}<button type="submit" aria-label="${label} ${s.name}">${label}</button></form>`;
  return html`${s.paused ? form('resume', 'Resume') : form('pause', 'Pause')} ${form('run', 'Run now', html` data-confirm="Run ${s.name} now? It runs once, as a manual run, with the production bot."`)}`;
}

async function renderSchedules(deps: AppDeps, req: Request, res: Response, kept: { error?: string; status?: number } = {}) {
  const ctx = await projectContext(deps, req, 'schedules');
  const projectId = ctx.project.id;
  const schedules = await listSchedules(deps.db.sql, projectId);
  const manage = canManage(ctx.role);
  const body = html`<p class="muted">The schedules the bot in production declares (<code>export const schedules</code>, read at each deploy); each due time runs <code>onSchedule</code> once. Times are the service's, in UTC; each schedule's cron is read in its own zone.</p>
${schedules.length ? html`<div class="table-wrap"><table class="stack" id="schedules"><thead><tr><th scope="col">Schedule</th><th scope="col">When</th><th scope="col">Next run</th><th scope="col">Last run</th>${manage ? html`<th scope="col">Change</th>` : ''}</tr></thead><tbody>
${schedules.map((s) => html`<tr id="schedule-${s.name}"><td data-label="Schedule"><a href="${schedulePath(projectId, s.name)}">${s.name}</a><br><small class="muted">declared at ${declaredAt(projectId, s.source)}</small></td>
<td data-label="When"><code>${s.cron}</code> <small>${s.time_zone}</small></td>
<td data-label="Next run" class="next">${s.paused ? html`<strong>paused</strong> since ${when(s.paused_at)}` : when(s.next_run_at)}</td>
<td data-label="Last run" class="last">${s.last_run ? html`${outcome(s.last_run)} · ${when(s.last_run.due_at)} <small class="muted">(${s.last_run.trigger})</small>${s.last_run.error ? html`<br>${runError(projectId, s.last_run)}` : ''}` : html`<span class="muted">never</span>`}</td>
${manage ? html`<td data-label="Change">${actions(projectId, ctx.csrf, s)}</td>` : ''}</tr>`)}
</tbody></table></div>` : html`<p class="muted">The bot in production declares no schedules. See <code>docs/bot-schedules.md</code>: a bot exports <code>schedules</code> and <code>onSchedule</code>, and a deploy reads them.</p>`}
${manage ? '' : html`<p class="muted">Your role (${ctx.role}) reads the schedules and their runs; owners and admins pause, resume and run them.</p>`}`;
  send(res, kept.status ?? 200, layout(ctx.shell('Scheduled tasks', { error: kept.error }), body));
}

export const showSchedules = (deps: AppDeps) => (req: Request, res: Response) => renderSchedules(deps, req, res);

export const showSchedule = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'schedules');
  const projectId = ctx.project.id;
  const name = String(req.params.name);
  const before = typeof req.query.before === 'string' && /^\d{1,18}$/.test(req.query.before) ? BigInt(req.query.before) : undefined;
  const s = await getSchedule(deps.db.sql, projectId, name);
  const runs = await listRuns(deps.db.sql, projectId, name, RUNS_PAGE + 1, before);
  const shown = runs.slice(0, RUNS_PAGE);
  const more = runs.length > RUNS_PAGE;
  const body = html`<p><a href="${schedulesPath(projectId)}">All scheduled tasks</a></p>
<dl class="facts"><dt>When</dt><dd><code>${s.cron}</code> in ${s.time_zone}</dd><dt>Declared at</dt><dd>${declaredAt(projectId, s.source)} (deployment ${s.deployment_id})</dd>
<dt>Next run</dt><dd>${s.paused ? html`<strong>paused</strong> since ${when(s.paused_at)}` : when(s.next_run_at)}</dd></dl>
${canManage(ctx.role) ? html`<div class="actions">${actions(projectId, ctx.csrf, s, true)}</div>` : ''}
<h2>Runs${before ? ' (older)' : ''}</h2>
${shown.length ? html`<div class="table-wrap"><table class="stack" id="runs"><thead><tr><th scope="col">Due</th><th scope="col">Trigger</th><th scope="col">Outcome</th><th scope="col">Started</th><th scope="col">Took</th><th scope="col">Error</th></tr></thead><tbody>
${shown.map((r) => html`<tr id="run-${r.id}"><td data-label="Due">${when(r.due_at)}</td><td data-label="Trigger">${r.trigger}</td><td data-label="Outcome">${outcome(r)}</td><td data-label="Started">${when(r.started_at)}</td><td data-label="Took">${r.duration_ms === null ? '—' : `${r.duration_ms} ms`}</td><td data-label="Error">${runError(projectId, r)}</td></tr>`)}
</tbody></table></div>` : html`<p class="muted">No runs${before ? ' before these' : ' yet'}.</p>`}
<p class="paging">${before ? html`<a href="${schedulePath(projectId, name)}">Newest</a>` : ''}${more ? html`<a href="${schedulePath(projectId, name, `?before=${shown[shown.length - 1].id}`)}" rel="next">Older runs</a>` : ''}</p>`;
  send(res, 200, layout(ctx.shell(`Scheduled task ${s.name}`), body));
};

/** The page the form was on: the schedule's own, or the list. */
function back(req: Request, projectId: string, name: string, done: string): string {
  return field(req, 'back') === 'schedule' ? schedulePath(projectId, name, `?done=${done}`) : schedulesPath(projectId, `?done=${done}`);
}

const change = (what: 'pause' | 'resume' | 'run') => (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'schedules', MANAGERS, `${what === 'run' ? 'run' : what} schedules`);
  const name = String(req.params.name);
  try {
    await changeOnce(deps, req, res, project.id, async () => {
      if (what === 'run') {
        const { key, event } = await runNow(deps, actor, project.id, name);
        // Handed to this instance's bot at once (as adminRunSchedule); without one, a reclaim pass takes it.
        deps.bot?.onEvent(project.id, key, { kind: 'schedule', schedule: event });
        return back(req, project.id, name, 'schedule_run');
      }
      await setPaused(deps, actor, project.id, name, what === 'pause');
      return back(req, project.id, name, what === 'pause' ? 'schedule_paused' : 'schedule_resumed');
    });
  } catch (e) {
    // A run still in progress, a schedule gone with a deploy: the reason on the list, nothing changed.
    if (!(e instanceof ApiError) || e.status >= 500) throw e;
    await renderSchedules(deps, req, res, { error: `Not done: ${e.message}`, status: e.status });
  }
};

export const submitPause = change('pause');
export const submitResume = change('resume');
export const submitRunNow = change('run');

/** This module's pages under /dashboard (router.ts mounts them). */
export const scheduleRoutes = projectPages('schedules', {
  '': { get: showSchedules },
  '/:name': { get: showSchedule },
  '/:name/pause': { post: submitPause },
  '/:name/resume': { post: submitResume },
  '/:name/run': { post: submitRunNow },
});

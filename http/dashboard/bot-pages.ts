/**
 * The console's Bot pages (issue 47, item 2), each on the operator API's functions:
 * - deployments (lib/deploy/changes.ts over listDeployments): who, when, the message, the files
 *   changed against the deployment before; owners and admins roll back to a kept one (rollback of
 *   lib/deploy/deployments.ts, as adminRollbackDeployment; audited `deployment.rollback` in the
 *   promotion's transaction);
 * - the preview console: a typed message through previewBot (lib/bot/preview.ts, as
 *   POST /v1/bot/preview, which needs code:write: owners and admins), showing what the bot would
 *   send, set, emit and log; nothing leaves;
 * - the development and production trees (lib/code/store.ts listFiles and readFile, as
 *   GET /v1/files), and a kept deployment's file, read-only with line numbers;
 * - the bot log (lib/bot/bot-log.ts), by level, in keyset pages, live: its first page's stream
 *   (`log/events`, live-stream.ts) pushes the lines newer than the last shown, on top, errors
 *   linked to the author's file and line.
 * Every text a bot sets (its files, sends, state, events, log lines) is shown as text.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage } from '../../lib/accounts/roles.js';
import { recordAuditOn } from '../../lib/accounts/audit.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { ApiError } from '../../lib/platform/errors.js';
import { rollback } from '../../lib/deploy/deployments.js';
import { deploymentFile, deploymentHistory, keptDeployments, type DeploymentHistoryEntry } from '../../lib/deploy/changes.js';
import type { Diagnostic } from '../../lib/deploy/diagnostic.js';
import { previewBot } from '../../lib/bot/preview.js';
import { botLogCountAfter, botLogCursors, botLogPage, type BotLogRow } from '../../lib/bot/bot-log.js';
import { listFiles, readFile, type Tree } from '../../lib/code/store.js';
import { html, plural, when, type Html } from './html.js';
import { csrfField, layout, projectPath } from './layout.js';
import { field, send } from './request.js';
import { projectContext } from './context.js';
import { bytes, changeOnce, count, onceField } from './console-kit.js';
import type { PageRoute } from './page-routes.js';
import { checkForm, type FormSchema } from './form-schema.js';
import { liveConnector, oobPart, streamLivePage, type ChangeSource } from './live-stream.js';

const MANAGERS = ['owner', 'admin'] as const;
const LOG_PAGE = 50;
const LEVELS = ['debug', 'info', 'warn', 'error'];
/** The project keeps this many lines (lib/bot/bot-log.ts): one read brings every line the page has not got. */
const LOG_KEPT = 1000;

const botPath = (projectId: string, rest = '') => projectPath(projectId, `/bot${rest}`);

function switcher(projectId: string, current: 'bot' | 'files' | 'log'): Html {
  const items: Array<[typeof current, string, string]> = [['bot', 'Deployments and preview', ''], ['files', 'Files', '/files'], ['log', 'Log', '/log']];
  return html`<nav class="switch" aria-label="Bot"><ul>${items.map(([k, label, rest]) => html`<li><a href="${botPath(projectId, rest)}"${k === current ? html` aria-current="page"` : ''}>${label}</a></li>`)}</ul></nav>`;
}

// ---------------------------------------------------------------------------------------------
// Where in the author's code

export interface Place {
  file: string;
  line: number;
}

/** The place an error names, as the runtime writes it (`at src/bot.ts:12:5`, `(src/bot.ts:12:5)`): the last one. */
export function placeIn(text: string): Place | undefined {
  let found: Place | undefined;
  for (const m of text.matchAll(/(?:\bat |\()([A-Za-z0-9_.@-]+(?:\/[A-Za-z0-9_.@-]+)*\.(?:ts|js|mjs|json)):(\d{1,6}):\d{1,6}/g)) found = { file: m[1], line: Number(m[2]) };
  return found;
}

/** A file of a tree, or of a kept deployment, at a line. */
export function fileHref(projectId: string, from: { tree: Tree } | { deployment: string }, file: string, line?: number): string {
  const q = new URLSearchParams('tree' in from ? { tree: from.tree } : { deployment: from.deployment });
  q.set('path', file);
  if (line) q.set('line', String(line));
  return `${botPath(projectId, '/files')}?${q.toString()}${line ? `#L${line}` : ''}`;
}

function placeLink(projectId: string, place: Place, from: { tree: Tree } | { deployment: string }): Html {
  return html`<a class="place" href="${fileHref(projectId, from, place.file, place.line)}">${place.file} line ${place.line}</a>`;
}

function diagnosticsList(projectId: string, diagnostics: Diagnostic[], tree: Tree): Html {
  return html`<ul class="diagnostics">${diagnostics.map((d) => html`<li>${placeLink(projectId, d, { tree })}: <span class="error-text">${d.message}</span> <small class="muted">(${d.source})</small></li>`)}</ul>`;
}

// ---------------------------------------------------------------------------------------------
// Deployments and the preview console

interface PreviewInput {
  text: string;
  from?: string;
  state?: string;
}

type PreviewResult = Awaited<ReturnType<typeof previewBot>>;

interface Kept {
  input?: PreviewInput;
  result?: PreviewResult;
  diagnostics?: Diagnostic[];
  error?: string;
  status?: number;
}

function changesCell(projectId: string, d: DeploymentHistoryEntry): Html {
  if (!d.changes) return html`<span class="muted">not promoted</span>`;
  const { added, changed, removed, first } = d.changes;
  const total = added.length + changed.length + removed.length;
  if (total === 0) return html`<span class="muted">no file changed</span>`;
  const link = (p: string) => html`<a href="${fileHref(projectId, { deployment: d.id }, p)}">${p}</a>`;
  const group = (label: string, paths: string[], withLinks: boolean) =>
    paths.length ? html`<li>${label} (${paths.length}): ${paths.map((p, i) => html`${i ? ', ' : ''}${withLinks ? link(p) : p}`)}</li>` : '';
  const list = html`<ul class="changes">${group('changed', changed, true)}${group(first ? 'files' : 'added', added, true)}${group('removed', removed, false)}</ul>`;
  const summary = first ? `${count(total)} files (the oldest deployment kept)` : `${count(total)} file${total === 1 ? '' : 's'} changed`;
  return total > 6 ? html`<details><summary>${summary}</summary>${list}</details>` : html`<span class="muted">${summary}</span>${list}`;
}

function deploymentsTable(projectId: string, csrf: string, history: DeploymentHistoryEntry[], manage: boolean): Html {
  if (!history.length) return html`<p class="muted">Nothing deployed yet: <code>POST /v1/deployments</code> builds the development tree and promotes it.</p>`;
  return html`<div class="table-wrap"><table class="stack" id="deployments"><thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Message</th><th scope="col">Status</th><th scope="col">Files</th>${manage ? html`<th scope="col">Rollback</th>` : ''}</tr></thead><tbody>
${history.map((d) => html`<tr id="deployment-${d.id}"${d.active ? html` class="active"` : ''}><td data-label="When">${when(d.created_at)}<br><small class="muted">${d.id}</small></td>
<td data-label="Who">${d.author}</td>
<td data-label="Message">${d.message ?? html`<span class="muted">none</span>`}${d.rollback_of ? html`<br><small class="muted">rollback to ${d.rollback_of}</small>` : ''}</td>
<td data-label="Status" class="status">${d.status}${d.active ? html` <strong class="badge">in production</strong>` : ''}${d.diagnostics.length ? diagnosticsList(projectId, d.diagnostics, 'development') : ''}</td>
<td data-label="Files">${changesCell(projectId, d)}</td>
${manage ? html`<td data-label="Rollback">${d.kept && !d.active
    ? html`<form method="post" action="${botPath(projectId, `/deployments/${encodeURIComponent(d.id)}/rollback`)}" class="inline" data-confirm="Put deployment ${d.id} of ${when(d.created_at)} back in production? Its bundle runs from the next event.">${csrfField(csrf)}${onceField()}<button type="submit" aria-label="Roll back to ${d.id}">Roll back to this</button></form>`
    : html`<span class="muted">${d.active ? 'running' : '—'}</span>`}</td>` : ''}</tr>`)}
</tbody></table></div><p class="muted">The last 20 deployments are kept (always the one in production); a rollback promotes a kept bundle again as a new deployment, without rebuilding.</p>`;
}

function json(v: unknown): string {
  return JSON.stringify(v, null, 2) ?? 'null';
}

function previewResult(projectId: string, r: PreviewResult): Html {
  const place = r.outcome.message ? placeIn(r.outcome.message) : undefined;
  return html`<section class="card" id="preview-result" aria-labelledby="preview-result-title"><h2 id="preview-result-title">What the bot would do</h2>
<p class="muted">A preview: the development tree handled the message in a throwaway sandbox. Nothing was sent, set or emitted; its tables are the preview schema.</p>
<dl class="facts"><dt>Outcome</dt><dd class="status">${r.outcome.status} <small class="muted">(${r.outcome.duration_ms} ms)</small></dd>
${r.outcome.message ? html`<dt>Error</dt><dd><code class="log-line">${r.outcome.message}</code>${place ? html`<br>${placeLink(projectId, place, { tree: 'development' })}` : ''}</dd>` : ''}
<dt>Would set the state</dt><dd>${r.state === null ? html`<span class="muted">nothing (unchanged)</span>` : html`<code>${r.state}</code>`}</dd></dl>
<h3>Would send (${r.sends.length})</h3>${r.sends.length ? html`<ol class="captured" id="preview-sends">${r.sends.map((s) => html`<li><pre>${json(s)}</pre></li>`)}</ol>` : html`<p class="muted">Nothing.</p>`}
<h3>Would emit (${r.events.length})</h3>${r.events.length ? html`<ol class="captured" id="preview-events">${r.events.map((e) => html`<li><code>${e.name}</code><pre>${json(e.payload)}</pre></li>`)}</ol>` : html`<p class="muted">Nothing.</p>`}
<h3>Would log (${r.logs.length})</h3>${r.logs.length ? html`<ol class="captured" id="preview-logs">${r.logs.map((l) => html`<li><span class="level">${l.level}</span> <code class="log-line">${l.message}</code></li>`)}</ol>` : html`<p class="muted">Nothing.</p>`}
</section>`;
}

async function renderBot(deps: AppDeps, req: Request, res: Response, kept: Kept = {}) {
  const ctx = await projectContext(deps, req, 'bot');
  const projectId = ctx.project.id;
  const [history, dev] = await Promise.all([deploymentHistory(deps.db.sql, projectId), listFiles(deps.db, projectId, 'development', deps.clock.now())]);
  const manage = canManage(ctx.role);
  const active = history.find((d) => d.active);
  const input = kept.input ?? { text: '' };
  const consoleSection = manage
    ? html`<section class="card" aria-labelledby="preview-title"><h2 id="preview-title">Preview console</h2>
<p class="muted">Type a customer's message: the development tree, built as a deploy builds it, handles it once. You see what it would send, set, emit and log; nothing reaches a customer or a webhook.</p>
<form method="post" action="${botPath(projectId, '/preview')}">${csrfField(ctx.csrf)}
  <label for="preview-text">Message</label><textarea id="preview-text" name="text" rows="2" required maxlength="4096">${input.text}</textarea>
  <details${input.from || input.state ? html` open` : ''}><summary>Sender and conversation state</summary>
  <label for="preview-from">Sender's number (digits; default 15550000000)</label><input id="preview-from" name="from" type="text" inputmode="numeric" pattern="[0-9]{8,15}" value="${input.from ?? ''}" autocomplete="off">
  <label for="preview-state">Conversation state (default unstructured)</label><input id="preview-state" name="state" type="text" maxlength="64" value="${input.state ?? ''}" autocomplete="off"></details>
  <div class="actions"><button type="submit" class="primary">Run preview</button></div>
</form></section>`
    : html`<p class="muted">Your role (${ctx.role}) reads the deployments, files and log; owners and admins run previews and roll back.</p>`;
  const body = html`${switcher(projectId, 'bot')}
<dl class="facts"><dt>Production</dt><dd>${active ? html`${active.id}, since ${when(active.created_at)} (<a href="${botPath(projectId, '/files?tree=production')}">files</a>)` : 'nothing deployed yet'}</dd>
<dt>Development</dt><dd>${count(dev.files.length)} files, ${bytes(dev.totalSize)} (<a href="${botPath(projectId, '/files?tree=development')}">files</a>)</dd></dl>
${kept.diagnostics ? html`<section class="card" id="preview-result"><h2>The development tree does not build</h2><p>Nothing ran. Fix these and preview again:</p>${diagnosticsList(projectId, kept.diagnostics, 'development')}</section>` : ''}
${kept.result ? previewResult(projectId, kept.result) : ''}
${consoleSection}
<section aria-labelledby="deployments-title"><h2 id="deployments-title">Deployments</h2>${deploymentsTable(projectId, ctx.csrf, history, manage)}</section>`;
  send(res, kept.status ?? 200, layout(ctx.shell('Bot', { error: kept.error }), body));
}

export const showBot = (deps: AppDeps) => (req: Request, res: Response) => renderBot(deps, req, res);

const PREVIEW_TEXT = 'Type a message of 1 to 4,096 characters.';
const PREVIEW_FORM = {
  text: { required: PREVIEW_TEXT, maxChars: { max: 4096, message: PREVIEW_TEXT } },
  from: { trim: true, pattern: { re: /^[0-9]{8,15}$/, message: "The sender's number is 8 to 15 digits." } },
  state: { trim: true, maxChars: { max: 64, message: 'A conversation state has at most 64 characters.' } },
} satisfies FormSchema;

/** The preview's input as POST /v1/bot/preview's contract has it (PreviewRequest), or its problem. */
function previewInput(req: Request): { input: PreviewInput; problem?: string } {
  const { values, problem } = checkForm(req, PREVIEW_FORM);
  return { input: { text: values.text ?? '', from: values.from, state: values.state }, problem };
}

/** Runs a preview (no change: nothing leaves, so no one-time token) and shows its result on the page. */
export const submitPreview = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { project } = await projectContext(deps, req, 'bot', MANAGERS, 'run previews');
  const { input, problem } = previewInput(req);
  if (problem) return renderBot(deps, req, res, { input, error: problem, status: 400 });
  try {
    const result = await previewBot(deps, project.id, { text: input.text, ...(input.from ? { from: input.from } : {}), ...(input.state ? { state: input.state } : {}) });
    await renderBot(deps, req, res, { input, result });
  } catch (e) {
    if (e instanceof ApiError && e.code === 'build_failed') return renderBot(deps, req, res, { input, diagnostics: (e.details?.diagnostics ?? []) as Diagnostic[], status: 422 });
    if (e instanceof ApiError && e.status < 500) return renderBot(deps, req, res, { input, error: e.message, status: e.status });
    throw e;
  }
};

export const submitRollback = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'bot', MANAGERS, 'roll back the bot');
  const target = String(req.params.deploymentId);
  await changeOnce(deps, req, res, project.id, async () => {
    // The audit row is written in the promotion's transaction: both are kept or neither.
    const { noOp } = await rollback(deps, project.id, target, {
      createdBy: actor.email,
      withinPromotion: (client, id) => recordAuditOn(client, deps.clock.now(), actor, { projectId: project.id, action: 'deployment.rollback', subject: target, after: { deployment_id: id } }),
    });
    if (!noOp) deps.bot?.releaseChanged(project.id);
    return botPath(project.id, '?done=rolled_back');
  });
};

// ---------------------------------------------------------------------------------------------
// Files

function codeView(content: string, hit?: number): Html {
  const lines = content.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return html`<div class="table-wrap"><table class="code" id="code"><tbody>${lines.map((l, i) => html`<tr id="L${i + 1}"${hit === i + 1 ? html` class="hit"` : ''}><td class="ln"><a href="#L${i + 1}" aria-label="Line ${i + 1}">${i + 1}</a></td><td class="src">${l}</td></tr>`)}</tbody></table></div>`;
}

export const showBotFiles = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'bot');
  const projectId = ctx.project.id;
  const q = req.query as Record<string, unknown>;
  const path = typeof q.path === 'string' && q.path ? q.path : undefined;
  const line = typeof q.line === 'string' && /^\d{1,6}$/.test(q.line) ? Number(q.line) : undefined;
  const deployment = typeof q.deployment === 'string' && q.deployment ? q.deployment : undefined;
  const now = deps.clock.now();
  if (deployment) {
    if (!path) throw new DashboardRefusal(400, 'Name a file of the deployment.');
    const content = await deploymentFile(deps.db.sql, projectId, deployment, path);
    const body = html`${switcher(projectId, 'files')}<p>${path} as deployment <code>${deployment}</code> promoted it (read-only). <a href="${fileHref(projectId, { tree: 'production' }, path, line)}">The same file in production now</a>.</p>
<section aria-label="${path}">${codeView(content, line)}</section>`;
    return send(res, 200, layout(ctx.shell(`Bot file ${path}`), body));
  }
  const tree: Tree = q.tree === 'production' ? 'production' : 'development';
  const [listed, file] = await Promise.all([listFiles(deps.db, projectId, tree, now), path ? readFile(deps.db, projectId, tree, path, now) : undefined]);
  const treeSwitch = html`<nav class="switch" aria-label="Tree"><ul>${(['development', 'production'] as const).map((t) => html`<li><a href="${botPath(projectId, `/files?tree=${t}`)}"${t === tree ? html` aria-current="page"` : ''}>${t}</a></li>`)}</ul></nav>`;
  const list = listed.files.length
    ? html`<div class="table-wrap"><table class="stack" id="files"><caption>The ${tree} tree: ${count(listed.files.length)} files, ${bytes(listed.totalSize)}</caption><thead><tr><th scope="col">File</th><th scope="col">Size</th><th scope="col">Changed</th></tr></thead><tbody>
${listed.files.map((f) => html`<tr${f.path === file?.path ? html` class="active"` : ''}><td data-label="File"><a href="${fileHref(projectId, { tree }, f.path)}">${f.path}</a>${f.protected ? html` <small class="muted">(platform)</small>` : ''}</td><td data-label="Size">${bytes(f.size)}</td><td data-label="Changed">${when(f.updated_at)}</td></tr>`)}
</tbody></table></div>`
    : html`<p class="muted">${tree === 'production' ? 'Nothing deployed yet.' : 'No files.'}</p>`;
  const body = html`${switcher(projectId, 'files')}${treeSwitch}
<p class="muted">Read-only. The development tree is edited through <code>PUT /v1/files/{path}</code> (or an agent); production changes only by a deploy or a rollback.</p>
${file ? html`<section class="card" aria-labelledby="file-title"><h2 id="file-title">${file.path}</h2><p class="muted">${tree}, version ${file.version}, ${bytes(file.size)}, changed ${when(file.updated_at)}</p>${codeView(file.content, line)}</section>` : ''}
${list}`;
  send(res, 200, layout(ctx.shell(file ? `Bot file ${file.path}` : 'Bot files'), body));
};

// ---------------------------------------------------------------------------------------------
// The bot log, live

/** Log lines as table rows; an error's place links into the deployment that ran it while it is kept, else production. */
function logRows(projectId: string, rows: BotLogRow[], kept: Set<string>): Html {
  return html`${rows.map((l) => {
    const place = l.level === 'error' || l.level === 'warn' ? placeIn(l.message) : undefined;
    const from = l.deployment_id && kept.has(l.deployment_id) ? { deployment: l.deployment_id } : { tree: 'production' as const };
    return html`<tr id="log-${l.id}" class="level-${LEVELS.includes(l.level) ? l.level : 'info'}"><td data-label="When">${when(l.created_at)}</td><td data-label="Level">${l.level}</td><td data-label="Kind">${l.kind}</td><td data-label="Message"><code class="log-line">${l.message}</code>${place ? html`<br>${placeLink(projectId, place, from)}` : ''}</td></tr>`;
  })}`;
}

function levelOf(v: unknown): string | undefined {
  return typeof v === 'string' && LEVELS.includes(v) ? v : undefined;
}

function idOf(v: unknown): bigint | undefined {
  return typeof v === 'string' && /^\d{1,18}$/.test(v) ? BigInt(v) : undefined;
}

export const showBotLog = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'bot');
  const projectId = ctx.project.id;
  const level = levelOf(req.query.level);
  const before = idOf(req.query.before);
  const [rows, kept] = await Promise.all([botLogPage(deps.db.sql, projectId, { level, before, limit: LOG_PAGE + 1 }), keptDeployments(deps.db.sql, projectId)]);
  const shown = rows.slice(0, LOG_PAGE);
  const more = rows.length > LOG_PAGE;
  const path = botPath(projectId, '/log');
  const link = (extra: Record<string, string | undefined>) => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries({ level, ...extra })) if (v) p.set(k, v);
    const s = p.toString();
    return s ? `${path}?${s}` : path;
  };
  const newest = shown[0]?.id ?? '0';
  const events = `${path}/events?${new URLSearchParams({ ...(level ? { level } : {}), after: newest }).toString()}`;
  // Live on the first page only: older pages stay as they are.
  const live = before === undefined;
  const body = html`${live ? liveConnector(events) : ''}${switcher(projectId, 'log')}
<form method="get" action="${path}" class="inline-form"><label for="log-level">Level</label><select id="log-level" name="level"><option value="">any</option>${LEVELS.map((l) => html`<option${l === level ? html` selected` : ''}>${l}</option>`)}</select> <button type="submit">Show</button></form>
${live ? html`<p class="muted" id="live-status" role="status">Live: new lines appear at the top without a reload.</p>` : html`<p class="muted">Older lines (not live). <a href="${link({})}">Newest</a></p>`}
<div class="table-wrap"><table class="stack" id="bot-log"><thead><tr><th scope="col">When</th><th scope="col">Level</th><th scope="col">Kind</th><th scope="col">Message</th></tr></thead><tbody>
${logRows(projectId, shown, kept)}
</tbody></table></div>
${shown.length ? '' : html`<p class="muted" id="log-empty">Nothing logged${level ? ` at level ${level}` : ''} yet.</p>`}
<p class="paging">${more ? html`<a href="${link({ before: shown[shown.length - 1].id })}" rel="next">Older lines</a>` : ''}</p>
<p class="muted">What the bot wrote with <code>log</code> and what the runtime says of its runs; the project keeps its 1,000 newest lines. An error links to the file and line of the deployment that ran it.</p>`;
  send(res, 200, layout(ctx.shell('Bot log'), body));
};

/** The projects' newest log lines, read for every project with a log page open. */
export const BOT_LOG_CHANGES: ChangeSource = { name: 'bot-log', read: (deps, projectIds) => botLogCursors(deps.db.sql, projectIds) };

/**
 * The live log: the lines after the newest the page was drawn with (`after`), on top of its table,
 * each event named by its last line so a reconnect (Last-Event-ID) gets nothing twice; the count
 * of new lines since the page opened; the "nothing logged" line gone once there is one.
 */
export const botLogEvents = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'bot');
  const projectId = ctx.project.id;
  const level = levelOf(req.query.level);
  const opened = idOf(req.query.after) ?? 0n;
  const resumed = idOf(req.get('last-event-id'));
  let last = resumed !== undefined && resumed > opened ? resumed : opened;
  await streamLivePage(deps, req, res, {
    projectId,
    source: BOT_LOG_CHANGES,
    key: projectId,
    draw: async () => {
      const rows = await botLogPage(deps.db.sql, projectId, { level, after: last, limit: LOG_KEPT });
      if (!rows.length) return { parts: {} };
      const kept = rows.some((r) => r.deployment_id) ? await keptDeployments(deps.db.sql, projectId) : new Set<string>();
      last = BigInt(rows[rows.length - 1].id);
      const added = await botLogCountAfter(deps.db.sql, projectId, level, opened);
      return {
        id: last.toString(),
        parts: {
          rows: oobPart('#bot-log > tbody', logRows(projectId, [...rows].reverse(), kept), { tag: 'tbody', swap: 'afterbegin' }),
          status: oobPart('#live-status', html`Live: ${plural(added, 'new line')} since the page opened.`),
          empty: oobPart('#log-empty', html``, { swap: 'delete' }),
        },
      };
    },
    recheck: () => projectContext(deps, req, 'bot'),
  });
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const botRoutes: PageRoute[] = [
  { method: 'get', path: '/projects/:projectId/bot', handler: showBot },
  { method: 'post', path: '/projects/:projectId/bot/preview', handler: submitPreview, form: PREVIEW_FORM },
  { method: 'post', path: '/projects/:projectId/bot/deployments/:deploymentId/rollback', handler: submitRollback },
  { method: 'get', path: '/projects/:projectId/bot/files', handler: showBotFiles },
  { method: 'get', path: '/projects/:projectId/bot/log', handler: showBotLog },
  { method: 'get', path: '/projects/:projectId/bot/log/events', handler: botLogEvents },
];

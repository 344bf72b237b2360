/**
 * The console's flows page (issue 47, item 8): the project's WhatsApp Flows with their status
 * (25 a page by name, keyset as `GET /v1/flows`), one flow's current Flow JSON (read-only,
 * pretty-printed, as text), its validation findings (checked again now with the validator that
 * publishing runs, beside those stored with the version and those the channel reported), and
 * publishing: a check at the channel first (the operator API's dry run), then *Publish* after a
 * confirmation. Publishing is irreversible at Meta, so owners and admins only; members read.
 * Everything goes through lib/flows (listFlowRows, findFlow, findVersion, publishFlow), as the
 * API and the operator API do.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage } from '../../lib/accounts/roles.js';
import { recordAuditAfter } from '../../lib/accounts/audit.js';
import { ApiError } from '../../lib/platform/errors.js';
import { cursorScope, cursorSecretOf, invalidCursor } from '../../lib/platform/cursor.js';
import { keysetPage } from '../../lib/platform/keyset-page.js';
import { findFlow, findVersion, listFlowRows } from '../../lib/flows/store.js';
import { publishFlow } from '../../lib/flows/publish.js';
import { validateFlowJson } from '../../lib/flows/validator/index.js';
import { html, when, type Html } from './html.js';
import { csrfField, layout, projectPath } from './layout.js';
import { field, send } from './request.js';
import { projectContext } from './context.js';
import { changeOnce, onceField } from './console-kit.js';
import type { PageRoute } from './page-routes.js';

const MANAGERS = ['owner', 'admin'] as const;
const FLOWS_PAGE = 25;

const flowsPath = (projectId: string, rest = '') => projectPath(projectId, `/flows${rest}`);
const flowPath = (projectId: string, name: string, rest = '') => flowsPath(projectId, `/${encodeURIComponent(name)}${rest}`);

/** A finding as the validator, the stored version or the channel gives it (fields read defensively: channel findings are Meta's shape). */
interface Finding {
  severity?: string;
  message?: string;
  error?: string;
  pointer?: string;
  line_start?: number;
  column_start?: number;
}

function findingsOf(v: unknown): Finding[] {
  return Array.isArray(v) ? (v.filter((f) => f && typeof f === 'object') as Finding[]) : [];
}

function countOf(findings: Finding[]): string {
  const errors = findings.filter((f) => f.severity === 'error').length;
  const warnings = findings.length - errors;
  if (!findings.length) return 'none';
  return [errors ? `${errors} error${errors === 1 ? '' : 's'}` : '', warnings ? `${warnings} warning${warnings === 1 ? '' : 's'}` : ''].filter(Boolean).join(', ');
}

function findingList(id: string, findings: Finding[], none: string): Html {
  if (!findings.length) return html`<p class="muted" id="${id}">${none}</p>`;
  return html`<div class="table-wrap"><table class="stack" id="${id}"><thead><tr><th scope="col">Severity</th><th scope="col">Where</th><th scope="col">Finding</th></tr></thead><tbody>
${findings.map((f) => html`<tr><td data-label="Severity"><span class="status">${f.severity ?? 'error'}</span></td><td data-label="Where">${f.line_start ? `line ${f.line_start}${f.column_start ? `, column ${f.column_start}` : ''}` : ''}${f.pointer ? html` <code>${f.pointer}</code>` : ''}</td><td data-label="Finding">${f.error ? html`<code>${f.error}</code> ` : ''}${f.message ?? ''}</td></tr>`)}
</tbody></table></div>`;
}

/** The Flow JSON as stored, indented two spaces (it is stored so; text that is not JSON is shown as it is). */
function pretty(definition: string): string {
  try {
    return JSON.stringify(JSON.parse(definition), null, 2);
  } catch {
    return definition;
  }
}

export const showFlows = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'flows');
  const projectId = ctx.project.id;
  const { page, nextCursor } = await keysetPage(
    { cursor: typeof req.query.cursor === 'string' ? req.query.cursor : undefined },
    {
      scope: cursorScope('consoleFlows', projectId),
      secret: cursorSecretOf(deps),
      decode: (payload) => {
        if (payload.length !== 1 || typeof payload[0] !== 'string') throw invalidCursor();
        return payload[0];
      },
      read: (after, take) => listFlowRows(deps, projectId, undefined, after, take),
      encode: (r) => [r.flow.name],
      bounds: { default: FLOWS_PAGE, max: FLOWS_PAGE },
    },
  );
  const body = html`<p class="muted">Flows are written with <code>POST /v1/flows/generate</code> and <code>PUT /v1/flows/{name}</code> (or by an agent); here you read them and publish them. Publishing at Meta cannot be undone: a published version stays as it is, and a later version is published as a new channel flow.</p>
${page.length
    ? html`<div class="table-wrap"><table class="stack" id="flows"><thead><tr><th scope="col">Flow</th><th scope="col">Status</th><th scope="col">Categories</th><th scope="col">Version</th><th scope="col">Published</th><th scope="col">Findings</th><th scope="col">Changed</th></tr></thead><tbody>
${page.map(({ flow, version }) => html`<tr><td data-label="Flow"><a href="${flowPath(projectId, flow.name)}">${flow.name}</a></td><td data-label="Status"><span class="status">${flow.status}</span></td><td data-label="Categories">${flow.categories.join(', ')}</td>
<td data-label="Version">${flow.currentVersion}</td><td data-label="Published">${flow.publishedVersion ? `version ${flow.publishedVersion}, ${when(flow.publishedAt)}` : '—'}</td>
<td data-label="Findings">${countOf(findingsOf(version?.findings))}${findingsOf(flow.channelFindings).length ? `; channel: ${countOf(findingsOf(flow.channelFindings))}` : ''}</td><td data-label="Changed">${when(flow.updatedAt)}</td></tr>`)}
</tbody></table></div>${nextCursor ? html`<p><a href="${flowsPath(projectId, `?cursor=${encodeURIComponent(nextCursor)}`)}">Next flows</a></p>` : ''}`
    : html`<p class="muted">${req.query.cursor ? 'No more flows.' : 'No flows yet.'}</p>`}`;
  send(res, 200, layout(ctx.shell('Flows'), body));
};

async function renderFlow(deps: AppDeps, req: Request, res: Response, kept: { error?: string; status?: number; findings?: Finding[] } = {}) {
  const ctx = await projectContext(deps, req, 'flows');
  const projectId = ctx.project.id;
  const flow = await findFlow(deps, projectId, String(req.params.name));
  const version = await findVersion(deps, flow);
  const now = validateFlowJson(version.definition);
  const manage = canManage(ctx.role);
  const path = flowPath(projectId, flow.name, '/publish');
  const alreadyPublished = flow.status === 'PUBLISHED' && flow.publishedVersion === version.version;
  const publishForm = (step: 'check' | 'publish', label: string, confirm?: string, cls = '') =>
    html`<form method="post" action="${path}" class="inline"${confirm ? html` data-confirm="${confirm}"` : ''}>${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="step" value="${step}"><input type="hidden" name="version" value="${version.version}"><button type="submit"${cls ? html` class="${cls}"` : ''}>${label}</button></form>`;
  const body = html`<p><a href="${flowsPath(projectId)}">All flows</a></p>
<dl class="facts" id="flow-facts">
  <dt>Status</dt><dd><span class="status">${flow.status}</span></dd>
  <dt>Categories</dt><dd>${flow.categories.join(', ')}</dd>
  <dt>Current version</dt><dd>${version.version} (${version.source}, ${when(version.createdAt)})</dd>
  <dt>Published</dt><dd>${flow.publishedVersion ? `version ${flow.publishedVersion}, ${when(flow.publishedAt)}` : 'never'}</dd>
  <dt>Channel flow</dt><dd>${flow.channelFlowId ? html`<code>${flow.channelFlowId}</code>` : '—'}${flow.channelDraftId ? html` (draft <code>${flow.channelDraftId}</code> of version ${flow.channelDraftVersion ?? '—'})` : ''}</dd>
</dl>
${kept.findings?.length ? html`<h2>Why it was refused</h2>${findingList('refusal-findings', kept.findings, '')}` : ''}
<section class="card" aria-labelledby="publish-title"><h2 id="publish-title">Publish</h2>
${manage
    ? alreadyPublished
      ? html`<p>Version ${version.version} is published. Change the flow through the API to publish a new version.</p>`
      : !now.valid
        ? html`<p>Version ${version.version} does not validate (see below): fix it with <code>PUT /v1/flows/${flow.name}</code> before publishing.</p>`
        : html`<p>First <em>check at the channel</em>: the Flow JSON is uploaded to a draft and Meta's own validation is read back; nothing is published. Then publish: from then on the flow can be sent, and this version can no longer change at Meta.</p>
<div class="actions">${publishForm('check', 'Check at the channel')} ${publishForm('publish', `Publish version ${version.version}`, `Publish version ${version.version} of ${flow.name} at Meta? This cannot be undone.`, 'primary')}</div>`
    : html`<p class="muted">Your role (${ctx.role}) reads flows; owners and admins publish them.</p>`}
</section>
<h2 id="findings-title">Validation findings (checked now)</h2>
${findingList('findings', now.findings as Finding[], 'No findings: the Flow JSON is valid.')}
<h2 id="channel-findings-title">Findings the channel reported</h2>
${findingList('channel-findings', findingsOf(flow.channelFindings), flow.channelDraftId || flow.channelFlowId ? 'None.' : 'Not checked at the channel yet.')}
<h2 id="json-title">Flow JSON (version ${version.version}, read-only)</h2>
<pre class="code" id="flow-json" tabindex="0" aria-labelledby="json-title"><code>${pretty(version.definition)}</code></pre>`;
  send(res, kept.status ?? 200, layout(ctx.shell(`Flow ${flow.name}`, { error: kept.error }), body));
}

export const showFlow = (deps: AppDeps) => (req: Request, res: Response) => renderFlow(deps, req, res);

/** POST flows/{name}/publish: `step` check (the dry run) or publish; the version the page showed must still be the current one. */
export const submitPublish = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'flows', MANAGERS, 'publish flows');
  const name = String(req.params.name);
  const dryRun = field(req, 'step') !== 'publish';
  try {
    await changeOnce(deps, req, res, ctx.project.id, async () => {
      const flow = await findFlow(deps, ctx.project.id, name);
      if (String(flow.currentVersion) !== field(req, 'version')) {
        throw new ApiError('conflict', `The flow changed since the page was shown (now version ${flow.currentVersion}): look at it again before publishing.`);
      }
      const r = await publishFlow(deps, ctx.project.id, name, { dryRun });
      if (r.published) {
        await recordAuditAfter(deps, ctx.actor, { projectId: ctx.project.id, action: 'flow.publish', subject: name, after: { version: r.flow.publishedVersion, channel_flow_id: r.flow.channelFlowId } });
      }
      return flowPath(ctx.project.id, name, `?done=${r.published ? 'flow_published' : 'flow_checked'}`);
    });
  } catch (e) {
    if (!(e instanceof ApiError) || e.status >= 500 || e.code === 'not_found') throw e;
    const details = e.details as { findings?: unknown } | undefined;
    await renderFlow(deps, req, res, { error: `Not ${dryRun ? 'checked' : 'published'}: ${e.message}`, status: e.status, findings: findingsOf(details?.findings) });
  }
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const flowRoutes: PageRoute[] = [
  { method: 'get', path: '/projects/:projectId/flows', handler: showFlows },
  { method: 'get', path: '/projects/:projectId/flows/:name', handler: showFlow },
  { method: 'post', path: '/projects/:projectId/flows/:name/publish', handler: submitPublish },
];

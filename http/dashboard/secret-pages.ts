/**
 * The console's secrets page (issue 47, item 3): the bot's secrets by name, keyed fingerprint and
 * dates; owners and admins set, replace and delete them through lib/bot/secrets.ts (the operator
 * API's functions, which write the audit row in the same transaction). A value is never shown
 * after it is saved, never put back into a form, and never part of an error: a refused form comes
 * back empty with the reason.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage } from '../../lib/accounts/roles.js';
import { ApiError } from '../../lib/platform/errors.js';
import { deleteSecret, listSecrets, SECRET_NAME, setSecret } from '../../lib/bot/secrets.js';
import { html, when } from './html.js';
import { csrfField, layout, projectPath } from './layout.js';
import { field, send } from './request.js';
import { projectContext } from './context.js';
import { changeOnce, onceField } from './console-kit.js';
import type { PageRoute } from './page-routes.js';

const MANAGERS = ['owner', 'admin'] as const;

async function renderSecrets(deps: AppDeps, req: Request, res: Response, kept: { error?: string; status?: number; name?: string } = {}) {
  const ctx = await projectContext(deps, req, 'secrets');
  const secrets = await listSecrets(deps, ctx.project.id);
  const manage = canManage(ctx.role);
  const path = projectPath(ctx.project.id, '/secrets');
  const body = html`<p class="muted">The bot reads a secret with <code>secrets.get(NAME)</code> at each event, so a change applies from the next message without a deploy. At most ${deps.config.botSecretsMax} secrets of ${deps.config.botSecretMaxBytes} bytes each. A value cannot be read back here: replace it to change it.</p>
${secrets.length
    ? html`<div class="table-wrap"><table class="stack" id="secrets"><thead><tr><th scope="col">Name</th><th scope="col">Fingerprint</th><th scope="col">Where</th><th scope="col">Created</th><th scope="col">Changed</th>${manage ? html`<th scope="col">Change</th>` : ''}</tr></thead><tbody>
${secrets.map((s) => html`<tr><td data-label="Name"><code>${s.name}</code></td><td data-label="Fingerprint"><code>${s.fingerprint}</code></td><td data-label="Where">${s.production_only ? 'production only' : 'production and preview'}</td><td data-label="Created">${when(s.created_at)}</td><td data-label="Changed">${when(s.updated_at)}</td>
${manage ? html`<td data-label="Change"><details><summary>Replace</summary><form method="post" action="${path}">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="name" value="${s.name}">
  <label for="value-${s.name}">New value of ${s.name}</label><input id="value-${s.name}" name="value" type="password" required autocomplete="new-password">
  <label class="check"><input type="checkbox" name="production_only" value="1"${s.production_only ? html` checked` : ''}> Production only (a preview reads null)</label>
  <button type="submit">Replace ${s.name}</button></form></details>
<form method="post" action="${path}/${encodeURIComponent(s.name)}/delete" class="inline" data-confirm="Delete the secret ${s.name}? The bot reads null from its next event.">${csrfField(ctx.csrf)}${onceField()}<button type="submit" class="danger" aria-label="Delete ${s.name}">Delete</button></form></td>` : ''}</tr>`)}
</tbody></table></div>`
    : html`<p class="muted">No secrets yet.</p>`}
${manage ? html`<section class="card" aria-labelledby="set-title"><h2 id="set-title">Set a secret</h2>
<form method="post" action="${path}">${csrfField(ctx.csrf)}${onceField()}
  <label for="secret-name">Name</label><input id="secret-name" name="name" type="text" required pattern="${SECRET_NAME.source.slice(1, -1)}" placeholder="SHOP_API_TOKEN" value="${kept.name ?? ''}" autocomplete="off">
  <label for="secret-value">Value</label><input id="secret-value" name="value" type="password" required autocomplete="new-password">
  <label class="check"><input type="checkbox" name="production_only" value="1"> Production only (a preview reads null)</label>
  <div class="actions"><button type="submit" class="primary">Save secret</button></div>
</form><p class="muted">Saving a name that exists replaces its value.</p></section>` : html`<p class="muted">Your role (${ctx.role}) sees the names; owners and admins change them.</p>`}`;
  send(res, kept.status ?? 200, layout(ctx.shell('Secrets', { error: kept.error }), body));
}

export const showSecrets = (deps: AppDeps) => (req: Request, res: Response) => renderSecrets(deps, req, res);

export const submitSecret = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'secrets', MANAGERS, 'change secrets');
  const name = (field(req, 'name') ?? '').trim();
  try {
    await changeOnce(deps, req, res, project.id, async () => {
      const { created } = await setSecret(deps, actor, project.id, name, { value: field(req, 'value') ?? '', productionOnly: field(req, 'production_only') === '1' });
      return projectPath(project.id, `/secrets?done=${created ? 'secret_set' : 'secret_replaced'}`);
    });
  } catch (e) {
    // The reason only (lib/bot/secrets.ts never puts a value in a message); the value is not put back.
    if (!(e instanceof ApiError) || e.status >= 500) throw e;
    await renderSecrets(deps, req, res, { error: `Not saved: ${e.message}`, status: e.status, name: SECRET_NAME.test(name) ? name : undefined });
  }
};

export const submitDeleteSecret = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'secrets', MANAGERS, 'delete secrets');
  await changeOnce(deps, req, res, project.id, async () => {
    await deleteSecret(deps, actor, project.id, String(req.params.name));
    return projectPath(project.id, '/secrets?done=secret_deleted');
  });
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const secretRoutes: PageRoute[] = [
  { method: 'get', path: '/projects/:projectId/secrets', handler: showSecrets },
  { method: 'post', path: '/projects/:projectId/secrets', handler: submitSecret },
  { method: 'post', path: '/projects/:projectId/secrets/:name/delete', handler: submitDeleteSecret },
];

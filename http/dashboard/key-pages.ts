/** API keys of a project (owners and admins): mint with a name and scopes (the secret shown once), rotate, revoke, edit scopes. */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { createKeyAs, revokeKeyAs, rotateKeyAs, updateKeyScopesAs } from '../../lib/dashboard/actions.js';
import { keysOf } from '../../lib/dashboard/reads.js';
import { SCOPES } from '../../lib/access/scope-catalogue.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { html, when, type Html } from './html.js';
import { csrfField, layout, projectPath } from './layout.js';
import { field, send } from './request.js';
import { projectContext } from './context.js';
import { projectPages } from './page-routes.js';

const MANAGERS = ['owner', 'admin'] as const;
type Key = Awaited<ReturnType<typeof keysOf>>[number];

function scopeBoxes(idPrefix: string, checked: readonly string[]): Html {
  return html`${SCOPES.map((s) => html`<label class="check"><input type="checkbox" name="scopes" value="${s}" id="${idPrefix}-${s}"${checked.includes(s) ? html` checked` : ''}> ${s}</label>`)}`;
}

function secretBox(label: string, secret: string): Html {
  return html`<section class="card" aria-labelledby="secret-title">
  <h2 id="secret-title">${label}</h2>
  <p>Copy it now: it is shown this once and cannot be read again.</p>
  <div class="secret"><code id="new-secret">${secret}</code> <button type="button" data-copy="new-secret" aria-label="Copy the secret">Copy</button></div>
</section>`;
}

function keyCard(projectId: string, csrf: string, k: Key): Html {
  const base = projectPath(projectId, `/keys/${encodeURIComponent(k.id)}`);
  const revoked = k.revokedAt !== null;
  return html`<article class="card" id="key-${k.id}">
  <h3>${k.name} <small class="muted">${k.mode} · ${k.hint}</small></h3>
  <dl class="facts">
    <dt>State</dt><dd class="status">${revoked ? `revoked ${when(k.revokedAt)}` : 'active'}</dd>
    <dt>Created</dt><dd>${when(k.createdAt)}</dd>
    <dt>Rotated</dt><dd>${when(k.rotatedAt)}</dd>
    <dt>Last used</dt><dd>${k.lastUsedAt ? when(k.lastUsedAt) : 'never'}</dd>
    <dt>Scopes</dt><dd>${k.scopes.join(', ')}</dd>
  </dl>
  ${revoked ? '' : html`<details><summary>Edit scopes</summary>
    <form method="post" action="${base}/scopes">
      ${csrfField(csrf)}
      <fieldset><legend>Scopes of ${k.name}</legend>${scopeBoxes(`scope-${k.id}`, k.scopes)}</fieldset>
      <button type="submit">Save scopes</button>
    </form></details>
  <div class="actions">
    <form method="post" action="${base}/rotate" class="inline">${csrfField(csrf)}<button type="submit" aria-label="Rotate ${k.name}">Rotate</button></form>
    <form method="post" action="${base}/revoke" class="inline" data-confirm="Revoke the key “${k.name}”? Every request with it is refused at once; this cannot be undone.">${csrfField(csrf)}<button type="submit" class="danger" aria-label="Revoke ${k.name}">Revoke</button></form>
  </div>`}
</article>`;
}

async function render(deps: AppDeps, req: Request, res: Response, status: number, extra: { secret?: Html; error?: string; notice?: string } = {}) {
  const ctx = await projectContext(deps, req, 'keys', MANAGERS, 'manage keys');
  const keys = await keysOf(deps, ctx.project.id);
  const body = html`${extra.secret ?? ''}
<section aria-labelledby="new-key">
  <h2 id="new-key">Create a key</h2>
  <form method="post" action="${projectPath(ctx.project.id, '/keys')}" class="card">
    ${csrfField(ctx.csrf)}
    <label for="key-name">Name</label>
    <input id="key-name" name="name" type="text" maxlength="200" required>
    <label for="key-mode">Mode</label>
    <select id="key-mode" name="mode"><option value="live">live (pk_live_…)</option><option value="test">test (pk_test_…)</option></select>
    <fieldset><legend>Scopes</legend>${scopeBoxes('new', [])}</fieldset>
    <button type="submit" class="primary">Create key</button>
  </form>
</section>
<section aria-labelledby="keys-title">
  <h2 id="keys-title">Keys</h2>
  ${keys.length ? keys.map((k) => keyCard(ctx.project.id, ctx.csrf, k)) : html`<p class="muted">No keys yet.</p>`}
</section>`;
  send(res, status, layout(ctx.shell('API keys', { error: extra.error, ...(extra.notice ? { notice: extra.notice } : {}) }), body));
}

export const showKeys = (deps: AppDeps) => (req: Request, res: Response) => render(deps, req, res, 200);

/** A refusal with a message for the form (400) is shown on the keys page; others go to the error page. */
async function act(deps: AppDeps, req: Request, res: Response, run: () => Promise<{ secret?: Html; notice?: string } | string>) {
  try {
    const out = await run();
    if (typeof out === 'string') return res.redirect(303, projectPath(String(req.params.projectId), `/keys?done=${out}`));
    await render(deps, req, res, 200, out);
  } catch (e) {
    if (e instanceof DashboardRefusal && e.status === 400) return render(deps, req, res, 400, { error: e.message });
    throw e;
  }
}

export const createKey = (deps: AppDeps) => (req: Request, res: Response) =>
  act(deps, req, res, async () => {
    const { actor } = await projectContext(deps, req, 'keys', MANAGERS, 'create keys');
    const { key, secret } = await createKeyAs(deps, actor, String(req.params.projectId), { name: field(req, 'name'), scopes: req.body?.scopes, mode: field(req, 'mode') });
    return { secret: secretBox(`New key “${key.name}”`, secret), notice: 'Key created.' };
  });

export const rotateKey = (deps: AppDeps) => (req: Request, res: Response) =>
  act(deps, req, res, async () => {
    const { actor } = await projectContext(deps, req, 'keys', MANAGERS, 'rotate keys');
    const { key, secret } = await rotateKeyAs(deps, actor, String(req.params.projectId), String(req.params.keyId));
    return { secret: secretBox(`New secret of “${key.name}”`, secret), notice: 'Key rotated: the old secret no longer works.' };
  });

export const revokeKey = (deps: AppDeps) => (req: Request, res: Response) =>
  act(deps, req, res, async () => {
    const { actor } = await projectContext(deps, req, 'keys', MANAGERS, 'revoke keys');
    await revokeKeyAs(deps, actor, String(req.params.projectId), String(req.params.keyId));
    return 'revoked';
  });

export const updateScopes = (deps: AppDeps) => (req: Request, res: Response) =>
  act(deps, req, res, async () => {
    const { actor } = await projectContext(deps, req, 'keys', MANAGERS, 'edit key scopes');
    await updateKeyScopesAs(deps, actor, String(req.params.projectId), String(req.params.keyId), req.body?.scopes);
    return 'scopes';
  });

/** This module's pages under /dashboard (router.ts mounts them). */
export const keyRoutes = projectPages('keys', {
  '': { get: showKeys, post: createKey },
  '/:keyId/rotate': { post: rotateKey },
  '/:keyId/revoke': { post: revokeKey },
  '/:keyId/scopes': { post: updateScopes },
});

/**
 * Credentials and projects: every row of the spec's X-Service-Project table, every 401/403 code,
 * scope enforcement from x-required-scopes, and rotation, revocation and scope edits taking effect.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/expect-error.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t.close();
});

const get = (path: string, bearer?: string, project?: string) => {
  const r = request(t.app).get(path);
  if (bearer !== undefined) r.set('Authorization', `Bearer ${bearer}`);
  if (project !== undefined) r.set('X-Service-Project', project);
  return r;
};

describe('ping with a project API key', () => {
  it('When a pk_live_ key calls ping, then it resolves to its own project and scopes', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['messages:send', 'conversations:read']);
    expect(key.secret).toMatch(/^pk_live_[a-z0-9]{40}$/);
    const res = await get('/v1/ping', key.secret);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { ok: true, projectId: p.id, scopes: ['messages:send', 'conversations:read'] } });
  });

  it('When a pk_test_ key calls ping, then it behaves like a live key', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read'], 'test');
    expect(key.secret.startsWith('pk_test_')).toBe(true);
    expect((await get('/v1/ping', key.secret)).body.data.projectId).toBe(p.id);
  });

  it('When the header names the key\'s own project in another case, then it is accepted', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    expect((await get('/v1/ping', key.secret, p.id.toUpperCase())).status).toBe(200);
  });

  it('When the header names another project, then 403 project_not_attached', async () => {
    const p = await t.admin.project();
    const other = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    expectError(await get('/v1/ping', key.secret, other.id), 403, 'project_not_attached');
  });

  it('When the header is blank, then 400 invalid_project_header', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    expectError(await get('/v1/ping', key.secret, '   '), 400, 'invalid_project_header');
    expectError(await get('/v1/ping', key.secret, ''), 400, 'invalid_project_header');
  });
});

describe('401 codes', () => {
  it('When the Authorization header is absent, then 401 api_key_required', async () => {
    expectError(await get('/v1/ping'), 401, 'api_key_required');
  });

  it.each([['Basic abc'], ['Bearer'], ['Bearer '], ['bearer not-one-of-ours'], ['Bearer pk_live_a b'], ['Bearer ' + 'x'.repeat(600)]])(
    'When the header is malformed (%s), then 401 api_key_required',
    async (header) => {
      expectError(await request(t.app).get('/v1/ping').set('Authorization', header), 401, 'api_key_required');
    },
  );

  it('When the key is unknown, then 401 invalid_api_key', async () => {
    expectError(await get('/v1/ping', 'pk_live_' + 'a'.repeat(40)), 401, 'invalid_api_key');
  });

  it('When the token is unknown, then 401 invalid_token', async () => {
    expectError(await get('/v1/ping', 'mcp_at_' + 'a'.repeat(40)), 401, 'invalid_token');
  });
});

describe('key lifecycle', () => {
  it('When a key is rotated, then the old secret is refused and the new one works', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    const rotated = await t.admin.call('post', `/admin/keys/${key.id}/rotate`);
    expect(rotated.secret).not.toBe(key.secret);
    expectError(await get('/v1/ping', key.secret), 401, 'invalid_api_key');
    expect((await get('/v1/ping', rotated.secret)).status).toBe(200);
  });

  it('When a key is revoked, then later use is 401 invalid_api_key', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    expect((await get('/v1/ping', key.secret)).status).toBe(200);
    await t.admin.call('post', `/admin/keys/${key.id}/revoke`);
    expectError(await get('/v1/ping', key.secret), 401, 'invalid_api_key');
  });

  it('When scopes are edited, then the next request sees them and the secret is unchanged', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    await t.admin.call('patch', `/admin/keys/${key.id}`, { scopes: ['webhooks:manage', 'flows:read'] });
    expect((await get('/v1/ping', key.secret)).body.data.scopes).toEqual(['webhooks:manage', 'flows:read']);
  });

  it('When keys are listed, then no secret or digest is returned', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    const { keys } = await t.admin.call('get', `/admin/projects/${p.id}/keys`);
    const text = JSON.stringify(keys);
    expect(text).not.toContain(key.secret);
    expect(text).not.toMatch(/secret/i);
    expect(keys[0].hint).toMatch(/^pk_live_[a-z0-9]{4}…$/);
  });

  it('When a key is stored, then only a digest of the secret is in the database', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    const rows = await t.db.pool.query('SELECT * FROM api_keys WHERE id = $1', [key.id]);
    expect(JSON.stringify(rows.rows)).not.toContain(key.secret.slice(8));
  });
});

describe('paused and deleted projects', () => {
  it('When the project is paused, then 403 project_inactive, and resume restores access', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    await t.admin.call('patch', `/admin/projects/${p.id}`, { status: 'paused' });
    expectError(await get('/v1/ping', key.secret), 403, 'project_inactive');
    const list = await get('/v1/projects', key.secret);
    expect(list.status).toBe(200);
    expect(list.body.data.projects).toEqual([{ id: p.id, name: p.name, scopes: ['contacts:read'], is_default: true, status: 'paused' }]);
    await t.admin.call('patch', `/admin/projects/${p.id}`, { status: 'active' });
    expect((await get('/v1/ping', key.secret)).status).toBe(200);
  });

  it('When the project is deleted, then 403 project_inactive and GET /v1/projects still works', async () => {
    const p = await t.admin.project();
    const key = await t.admin.key(p.id, ['contacts:read']);
    await t.admin.call('delete', `/admin/projects/${p.id}`);
    expectError(await get('/v1/ping', key.secret), 403, 'project_inactive');
    expect((await get('/v1/projects', key.secret)).body.data.projects[0].status).toBe('deleted');
  });
});

describe('OAuth agent access tokens and X-Service-Project', () => {
  async function twoProjectToken() {
    const a = await t.admin.project('A');
    const b = await t.admin.project('B');
    const tok = await t.admin.connection([
      { projectId: a.id, scopes: ['contacts:read'] },
      { projectId: b.id, scopes: ['webhooks:manage'] },
    ]);
    return { a, b, tok };
  }

  it('When a read omits the header, then the connection\'s default project is used', async () => {
    const { a, tok } = await twoProjectToken();
    expect(tok.secret).toMatch(/^mcp_at_/);
    const res = await get('/v1/ping', tok.secret);
    expect(res.body.data).toEqual({ ok: true, projectId: a.id, scopes: ['contacts:read'] });
  });

  it('When the default is moved, then reads without the header follow it', async () => {
    const { b, tok } = await twoProjectToken();
    await t.admin.call('put', `/admin/connections/${tok.connectionId}/projects/${b.id}`, { scopes: ['webhooks:manage'], is_default: true });
    expect((await get('/v1/ping', tok.secret)).body.data.projectId).toBe(b.id);
  });

  it('When the header names an attached project, then its own scopes apply (no pooling)', async () => {
    const { b, tok } = await twoProjectToken();
    const res = await get('/v1/ping', tok.secret, b.id);
    expect(res.body.data).toEqual({ ok: true, projectId: b.id, scopes: ['webhooks:manage'] });
  });

  it('When the header names a project not attached, then 403 project_not_attached', async () => {
    const { tok } = await twoProjectToken();
    const c = await t.admin.project('C');
    expectError(await get('/v1/ping', tok.secret, c.id), 403, 'project_not_attached');
  });

  it('When the header is blank, then 400 invalid_project_header', async () => {
    const { tok } = await twoProjectToken();
    expectError(await get('/v1/ping', tok.secret, ' '), 400, 'invalid_project_header');
  });

  it('When the connection has no projects, then 403 no_project_access', async () => {
    const tok = await t.admin.connection([]);
    expectError(await get('/v1/ping', tok.secret), 403, 'no_project_access');
  });

  it('When the token is revoked, then 401 invalid_token', async () => {
    const { tok } = await twoProjectToken();
    await t.admin.call('post', `/admin/tokens/${tok.tokenId}/revoke`);
    expectError(await get('/v1/ping', tok.secret), 401, 'invalid_token');
  });

  it('When the token expires, then 401 invalid_token', async () => {
    const { tok } = await twoProjectToken();
    t.clock.advance(3599_000);
    expect((await get('/v1/ping', tok.secret)).status).toBe(200);
    t.clock.advance(1_000);
    expectError(await get('/v1/ping', tok.secret), 401, 'invalid_token');
  });

  it('When a token lists projects, then each has its own scopes and one is the default', async () => {
    const { a, b, tok } = await twoProjectToken();
    const res = await get('/v1/projects', tok.secret, 'ignored-header');
    expect(res.status).toBe(200);
    expect(res.body.data.projects).toEqual([
      { id: a.id, name: 'A', scopes: ['contacts:read'], is_default: true, status: 'active' },
      { id: b.id, name: 'B', scopes: ['webhooks:manage'], is_default: false, status: 'active' },
    ]);
  });

  it('When the default project is paused, then GET /v1/projects still works and ping is 403 project_inactive', async () => {
    const { a, tok } = await twoProjectToken();
    await t.admin.call('patch', `/admin/projects/${a.id}`, { status: 'paused' });
    expect((await get('/v1/projects', tok.secret)).status).toBe(200);
    expectError(await get('/v1/ping', tok.secret), 403, 'project_inactive');
  });

  it('When the default project is detached, then another attached project becomes the default', async () => {
    const { a, b, tok } = await twoProjectToken();
    await t.admin.call('delete', `/admin/connections/${tok.connectionId}/projects/${a.id}`);
    expect((await get('/v1/ping', tok.secret)).body.data.projectId).toBe(b.id);
  });
});

describe('two instances sharing one database', () => {
  it('When an operator edits scopes on one instance, then the other instance sees it without waiting for the cache to expire', async () => {
    const other = await startTestApp({ config: { credentialCacheTtlMs: 3_600_000 } });
    try {
      const p = await t.admin.project();
      const key = await t.admin.key(p.id, ['contacts:read']);
      const ping = () => request(other.app).get('/v1/ping').set('Authorization', `Bearer ${key.secret}`);
      expect((await ping()).body.data.scopes).toEqual(['contacts:read']); // now cached on the other instance
      await t.admin.call('patch', `/admin/keys/${key.id}`, { scopes: ['flows:read'] });
      let scopes: string[] = [];
      for (let i = 0; i < 50 && scopes[0] !== 'flows:read'; i++) {
        if (i) await new Promise((r) => setTimeout(r, 20)); // the notification travels through PostgreSQL
        scopes = (await ping()).body.data.scopes;
      }
      expect(scopes).toEqual(['flows:read']);
      await t.admin.call('post', `/admin/keys/${key.id}/revoke`);
      let status = 200;
      for (let i = 0; i < 50 && status === 200; i++) {
        if (i) await new Promise((r) => setTimeout(r, 20));
        status = (await ping()).status;
      }
      expect(status).toBe(401);
    } finally {
      await other.close();
    }
  });
});

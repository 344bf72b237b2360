/**
 * Storage quotas of project tables (issue 31): rows and bytes per schema, defaults from the
 * config, a per-project override by the operator API and the CLI, visible to the operator, and
 * 409 `table_quota_exceeded` (nothing written) from the API's updates and the bot's inserts alike.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { randomBytes } from 'node:crypto';
import type { TestApp } from '../support/app.js';
import { tablesHarness } from '../support/tables.js';
import { physicalSchema } from '../../lib/tables/isolation.js';
import { runHelper, type BotDeps } from '../../lib/bot/helpers.js';
import { runOps } from '../support/ops.js';

let t: TestApp;
let url: string;
const h = tablesHarness({ config: { tablesQuotaPreviewRows: 7, tablesQuotaPreviewBytes: 5_000_000 }, listen: true }, (started) => ({ t, url } = started));
const made = h.made;

function admin(method: 'get' | 'post' | 'put', path: string, body?: object) {
  const req = request(t.app)[method](path).set('Authorization', `Bearer ${t.adminToken}`);
  return body ? req.send(body) : req;
}

const ops = (args: string[]) => runOps(url, t.adminToken, args);

async function project() {
  const p = await t.admin.project();
  made.push(p.id);
  const key = (await t.admin.key(p.id, ['tables:read', 'tables:write'])).secret;
  expect((await admin('post', `/admin/projects/${p.id}/tables/ddl`, { sql: 'CREATE TABLE notes (id int PRIMARY KEY, body text)' })).status).toBe(200);
  return { id: p.id, key };
}

/** The bot's `tables.insert`, as the sandbox calls it. */
async function botInsert(projectId: string, row: object) {
  const deps = t.services.deps as unknown as BotDeps;
  return JSON.parse(await runHelper(deps, { projectId, mode: 'production', logLines: 0 }, 'tables.insert', JSON.stringify({ table: 'notes', row })));
}

const count = async (projectId: string) => (await t.db.pool.query(`SELECT count(*)::int AS n FROM ${await physicalSchema(t.db.sql, projectId, 'public')}.notes`)).rows[0].n;

describe('table storage quotas', () => {
  it('When the operator looks, then both schemas show their limits (config defaults) and usage', async () => {
    const p = await project();
    const res = await admin('get', `/admin/projects/${p.id}/tables/quota`).expect(200);
    expect(res.body.data.schemas).toEqual([
      { schema: 'public', max_rows: t.config.tablesQuotaPublicRows, max_bytes: t.config.tablesQuotaPublicBytes, rows_overridden: false, bytes_overridden: false, rows: 0, bytes: expect.any(Number) },
      { schema: 'preview', max_rows: 7, max_bytes: 5_000_000, rows_overridden: false, bytes_overridden: false, rows: 0, bytes: 0 },
    ]);
    expect(res.body.data.schemas[0].bytes).toBeGreaterThan(0); // the table's primary-key index
  });

  it('When the project is at its row quota, then the bot\'s insert is 409 table_quota_exceeded and writes nothing; back to the default, it inserts', async () => {
    const p = await project();
    const set = await ops(['tables', 'quota', p.id, '--rows', '0']);
    expect(set.code).toBe(0);
    expect(set.stdout).toMatch(/^public +0 +0 \(project\)/m);
    const refused = await botInsert(p.id, { id: 1, body: 'x' });
    expect(refused).toMatchObject({ ok: false, error: { code: 'table_quota_exceeded' } });
    expect(await count(p.id)).toBe(0);
    expect((await ops(['tables', 'quota', p.id, '--rows', 'default'])).code).toBe(0);
    expect(await botInsert(p.id, { id: 1, body: 'x' })).toMatchObject({ ok: true, value: { id: 1, body: 'x' } });
    expect(await count(p.id)).toBe(1);
  });

  it('When a write would pass the byte quota, then the bot\'s insert and the API\'s update are 409 with the limits, and deleting still works', async () => {
    const p = await project();
    expect(await botInsert(p.id, { id: 1, body: 'small' })).toMatchObject({ ok: true });
    const before = (await admin('get', `/admin/projects/${p.id}/tables/quota`).expect(200)).body.data.schemas[0].bytes;
    const put = await admin('put', `/admin/projects/${p.id}/tables/quota`, { schema: 'public', max_bytes: before + 16384 }).expect(200);
    expect(put.body.data.schemas[0]).toMatchObject({ max_bytes: before + 16384, bytes_overridden: true, rows_overridden: false });
    const big = randomBytes(150_000).toString('base64'); // incompressible, about 200 KB
    const bot = await botInsert(p.id, { id: 2, body: big });
    expect(bot).toMatchObject({ ok: false, error: { code: 'table_quota_exceeded' } });
    const api = await request(t.app).patch('/v1/tables/notes/rows').set('Authorization', `Bearer ${p.key}`)
      .send({ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { body: big } });
    expect(api.status).toBe(409);
    expect(api.body.error).toMatchObject({ code: 'table_quota_exceeded', details: { schema: 'public', max_bytes: before + 16384, bytes: expect.any(Number) } });
    expect(api.body.error.details.bytes).toBeGreaterThan(before + 16384);
    const row = await t.db.pool.query(`SELECT body FROM ${await physicalSchema(t.db.sql, p.id, 'public')}.notes`);
    expect(row.rows).toEqual([{ body: 'small' }]);
    // A small update within the limit still works; deletes are never refused.
    await request(t.app).patch('/v1/tables/notes/rows').set('Authorization', `Bearer ${p.key}`)
      .send({ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { body: 'tiny' } }).expect(200);
    await admin('put', `/admin/projects/${p.id}/tables/quota`, { schema: 'public', max_bytes: 0 }).expect(200);
    await request(t.app).delete('/v1/tables/notes/rows').query({ filters: JSON.stringify([{ column: 'id', op: 'eq', value: 1 }]) })
      .set('Authorization', `Bearer ${p.key}`).expect(200);
    expect(await count(p.id)).toBe(0);
  });

  it('When the override is bad, then 400/404 (API) or exit 2 (CLI) and nothing changes', async () => {
    const p = await project();
    for (const body of [{ schema: 'public', max_rows: -1 }, { schema: 'staging', max_rows: 1 }, { max_rows: 1 }, { schema: 'public', max_rows: 1.5 }, { schema: 'public', max_bytes: '10' }, { schema: 'public', extra: 1 }]) {
      const res = await admin('put', `/admin/projects/${p.id}/tables/quota`, body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
    }
    await admin('put', '/admin/projects/prj_nope/tables/quota', { schema: 'public', max_rows: 1 }).expect(404);
    await admin('get', '/admin/projects/prj_nope/tables/quota').expect(404);
    expect((await ops(['tables', 'quota', p.id, '--rows', 'many'])).code).toBe(2);
    expect((await ops(['tables', 'quota', p.id, '--schema', 'staging', '--rows', '1'])).code).toBe(2);
    const res = await admin('get', `/admin/projects/${p.id}/tables/quota`).expect(200);
    expect(res.body.data.schemas.every((q: any) => !q.rows_overridden && !q.bytes_overridden)).toBe(true);
  });
});

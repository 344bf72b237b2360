/**
 * Storage quotas hold before the disk grows (issue 44, items 3 and 4): operator DDL that creates
 * data is stopped at what remains of the quota and leaves nothing behind, and a write is judged by
 * what it would write before it writes, so a refused one leaves the measured usage where it was.
 * Usage is read as the operator reads it (`GET /admin/projects/{id}/tables/quota`).
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { randomBytes } from 'node:crypto';
import type { TestApp } from '../support/app.js';
import { tablesHarness } from '../support/tables.js';
import { runHelper, type BotDeps } from '../../lib/bot/helpers.js';
import { timingBound } from '../support/retry-timing.js';

let t: TestApp;
const h = tablesHarness({}, (started) => (t = started.t));
const made = h.made;

function admin(method: 'get' | 'post' | 'put', path: string, body?: object) {
  const req = request(t.app)[method](path).set('Authorization', `Bearer ${t.adminToken}`);
  return body ? req.send(body) : req;
}

async function project() {
  const p = await t.admin.project();
  made.push(p.id);
  const key = (await t.admin.key(p.id, ['tables:read', 'tables:write'])).secret;
  return { id: p.id, key };
}

const ddl = (id: string, sql: string) => admin('post', `/admin/projects/${id}/tables/ddl`, { sql });
// Rows are PostgreSQL's statistics (they reach other sessions within about a second): compare bytes.
const usage = async (id: string): Promise<{ rows: number; bytes: number }> => (await admin('get', `/admin/projects/${id}/tables/quota`).expect(200)).body.data.schemas[0];
const setQuota = (id: string, q: { max_rows?: number | null; max_bytes?: number | null }) =>
  admin('put', `/admin/projects/${id}/tables/quota`, { schema: 'public', ...q }).expect(200);
const tables = async (id: string): Promise<string[]> => (await admin('get', `/admin/projects/${id}/tables`).expect(200)).body.data.tables.map((x: { name: string }) => x.name);
const values = (n: number) => Array.from({ length: n }, (_, i) => `(${i + 1})`).join(', ');

/** Two small seed tables: a cross join of them (and of itself) makes millions of rows. */
async function seeded() {
  const p = await project();
  await ddl(p.id, `CREATE TABLE nums (n) AS VALUES ${values(1000)}`).expect(200);
  await ddl(p.id, `CREATE TABLE d (n) AS VALUES ${values(100)}`).expect(200);
  return p;
}

describe('operator DDL is held to the storage quota', () => {
  timingBound('refused within 5 s').it('When CREATE TABLE AS would pass the row quota, then 409 table_quota_exceeded at once, and nothing grows', async () => {
    const p = await seeded();
    await setQuota(p.id, { max_rows: 1100 + 1000, max_bytes: null });
    const before = await usage(p.id);
    const started = Date.now();
    // The probe of issue 44: 10 million rows, 770 MB, 25 s before.
    const res = await ddl(p.id, 'CREATE TABLE big AS SELECT gen_random_uuid()::text AS u, a.n FROM nums a, d b, d c');
    const took = Date.now() - started;
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'table_quota_exceeded', details: { schema: 'public', max_rows: 2100, exceeded: 'rows' } });
    expect(res.body.error.message).toMatch(/rows left of the public tables' quota \(2100 rows\)/);
    expect(took).toBeLessThan(5000);
    expect((await usage(p.id)).bytes).toBe(before.bytes);
    expect(await tables(p.id)).toEqual(['d', 'nums']);
  });

  it('When CREATE TABLE AS would pass the byte quota (2 MB), then it stops there: 409, and the measured bytes do not move', async () => {
    const p = await seeded();
    const before = await usage(p.id);
    await setQuota(p.id, { max_rows: null, max_bytes: before.bytes + 2_000_000 });
    const res = await ddl(p.id, 'CREATE TABLE big AS SELECT gen_random_uuid()::text AS u, a.n FROM nums a, d b, d c');
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'table_quota_exceeded', details: { max_bytes: before.bytes + 2_000_000, exceeded: 'bytes' } });
    expect((await usage(p.id)).bytes).toBe(before.bytes);
    expect(await tables(p.id)).toEqual(['d', 'nums']);
    // Within the quota the same form works, rows and all (VALUES, column lists, WITH DATA).
    await ddl(p.id, 'CREATE TABLE small (u, n) AS SELECT gen_random_uuid()::text, a.n FROM nums a WHERE a.n <= 500 WITH DATA').expect(200);
    await ddl(p.id, "CREATE TABLE seeded AS VALUES (1, 'é'), (2, 'b')").expect(200);
    const after = await usage(p.id);
    expect(after.bytes).toBeGreaterThan(before.bytes);
    expect(after.bytes).toBeLessThanOrEqual(before.bytes + 2_000_000);
    const key = (await t.admin.key(p.id, ['tables:read'])).secret;
    const rows = await request(t.app).get('/v1/tables/small/rows').query({ limit: 50 }).set('Authorization', `Bearer ${key}`).expect(200);
    expect(rows.body.data.rows).toHaveLength(50);
    expect(Object.keys(rows.body.data.rows[0])).toEqual(['u', 'n']);
    const seededRows = await request(t.app).get('/v1/tables/seeded/rows').set('Authorization', `Bearer ${key}`).expect(200);
    expect(seededRows.body.data.rows).toEqual([{ column1: 1, column2: 'é' }, { column1: 2, column2: 'b' }]);
  });

  it('When an index build or a table rewrite grows the schema past its quota, then it is rolled back with 409 and leaves nothing', async () => {
    const p = await seeded();
    const before = await usage(p.id);
    await setQuota(p.id, { max_bytes: before.bytes + 1000 });
    for (const sql of ['CREATE INDEX nums_n ON nums (n)', 'ALTER TABLE nums ADD COLUMN u text DEFAULT gen_random_uuid()::text']) {
      const res = await ddl(p.id, sql);
      expect({ sql, status: res.status, code: res.body.error?.code }).toEqual({ sql, status: 409, code: 'table_quota_exceeded' });
      expect((await usage(p.id)).bytes).toBe(before.bytes);
    }
    // What does not grow the schema still runs over the quota; so does what shrinks it.
    await ddl(p.id, "COMMENT ON TABLE nums IS 'numbers'").expect(200);
    await ddl(p.id, 'DROP TABLE d').expect(200);
    expect((await usage(p.id)).bytes).toBeLessThan(before.bytes);
  });
});

describe('a write is judged by what it would write, before it writes', () => {
  async function grow() {
    const p = await project();
    await ddl(p.id, "CREATE TABLE grow (id, body) AS VALUES (1, 'small'), (2, 'other')").expect(200);
    await ddl(p.id, 'ALTER TABLE grow ADD PRIMARY KEY (id)').expect(200);
    return p;
  }
  const patch = (key: string, id: number, body: string) =>
    request(t.app).patch('/v1/tables/grow/rows').set('Authorization', `Bearer ${key}`).send({ filters: [{ column: 'id', op: 'eq', value: id }], set: { body } });

  it('When 25 updates of 800 KB each are refused (the schema already over its quota, and with room but not enough), then the measured bytes stay exactly where they were', async () => {
    const p = await grow();
    const before = await usage(p.id);
    for (const max of [Math.floor(before.bytes / 2), before.bytes + 600_000]) {
      await setQuota(p.id, { max_bytes: max });
      for (let i = 0; i < 25; i++) {
        const big = randomBytes(600_000).toString('base64'); // incompressible, 800 KB
        const res = await patch(p.key, 1 + (i % 2), big);
        expect(res.status).toBe(409);
        expect(res.body.error).toMatchObject({ code: 'table_quota_exceeded', details: { schema: 'public', max_bytes: max } });
        expect(res.body.error.details.bytes).toBeGreaterThan(max);
      }
      expect((await usage(p.id)).bytes).toBe(before.bytes);
    }
    const rows = await request(t.app).get('/v1/tables/grow/rows').set('Authorization', `Bearer ${p.key}`).expect(200);
    expect(rows.body.data.rows).toEqual([{ id: 1, body: 'small' }, { id: 2, body: 'other' }]);
  });

  it('When a 100 KB update would cross the limit, then it is refused even though it would compress to little; a small one still passes', async () => {
    const p = await grow();
    const before = await usage(p.id);
    await setQuota(p.id, { max_bytes: before.bytes + 50_000 });
    for (const body of ['x'.repeat(100_000), randomBytes(75_000).toString('base64')]) {
      const res = await patch(p.key, 1, body);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('table_quota_exceeded');
    }
    expect((await usage(p.id)).bytes).toBe(before.bytes);
    await patch(p.key, 1, 'y'.repeat(20_000)).expect(200);
    // Two rows of 20 KB each are 40 KB (the filter matches both): judged by every row it changes.
    const both = await request(t.app).patch('/v1/tables/grow/rows').set('Authorization', `Bearer ${p.key}`)
      .send({ filters: [{ column: 'id', op: 'gte', value: 1 }], set: { body: 'z'.repeat(30_000) } });
    expect(both.status).toBe(409);
  });

  it("When the bot's inserts would pass the quota, then they are refused before writing and the measured bytes stay put", async () => {
    const p = await grow();
    const before = await usage(p.id);
    await setQuota(p.id, { max_bytes: before.bytes + 50_000 });
    const deps = t.services.deps as unknown as BotDeps;
    const insert = async (row: object) => JSON.parse(await runHelper(deps, { projectId: p.id, mode: 'production', logLines: 0 }, 'tables.insert', JSON.stringify({ table: 'grow', row })));
    for (let i = 0; i < 10; i++) {
      expect(await insert({ id: 10 + i, body: randomBytes(150_000).toString('base64') })).toMatchObject({ ok: false, error: { code: 'table_quota_exceeded' } });
    }
    expect((await usage(p.id)).bytes).toBe(before.bytes);
    expect(await insert({ id: 3, body: 'fits' })).toMatchObject({ ok: true, value: { id: 3, body: 'fits' } });
  });

  it('When max_affected would be passed, then it is refused before the change runs', async () => {
    const p = await grow();
    await setQuota(p.id, { max_bytes: null });
    const before = await usage(p.id);
    const res = await request(t.app).patch('/v1/tables/grow/rows').set('Authorization', `Bearer ${p.key}`)
      .send({ filters: [{ column: 'id', op: 'gte', value: 1 }], set: { body: randomBytes(300_000).toString('base64') }, max_affected: 1 });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'max_affected_exceeded', details: { affected: 2, max_affected: 1 } });
    expect((await usage(p.id)).bytes).toBe(before.bytes);
  });
});

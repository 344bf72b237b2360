/**
 * What leaves the database for a tenant is bounded (issue 44, item 6): a page of table rows holds
 * at most TABLES_PAGE_MAX_BYTES of row data (4 MiB by default), enforced in SQL. A page that reaches
 * the cap is shorter, with a cursor; a row that alone passes it is 400 `row_too_large`. Before,
 * fifty rows of 1 MB values were one 54 MB page.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { tablesHarness } from '../support/tables.js';
import { physicalSchema } from '../../lib/tables/isolation.js';
import { DEFAULT_PAGE_MAX_BYTES } from '../../lib/tables/rows.js';
import { runHelper, type BotDeps } from '../../lib/bot/helpers.js';

const h = tablesHarness();
let t: TestApp;
const made = h.made;
const MB = 1_000_000;
beforeAll(() => {
  t = h.t;
});

/** A project with `fat`: 60 rows of 1 MB values (and a small note each), written as the service. */
async function fatProject() {
  const p = await t.admin.project();
  made.push(p.id);
  const key = (await t.admin.key(p.id, ['tables:read'])).secret;
  await request(t.app).post(`/admin/projects/${p.id}/tables/ddl`).set('Authorization', `Bearer ${t.adminToken}`)
    .send({ sql: 'CREATE TABLE fat (id int PRIMARY KEY, note text, body text)' }).expect(200);
  const schema = await physicalSchema(t.db.sql, p.id, 'public');
  await t.db.pool.query(`INSERT INTO ${schema}.fat SELECT n, 'note ' || n, repeat('x', ${MB}) FROM generate_series(1, 60) AS n`);
  return { id: p.id, key, schema };
}

const rows = (key: string, query: Record<string, string | number>) => request(t.app).get('/v1/tables/fat/rows').query(query).set('Authorization', `Bearer ${key}`);

describe('a page of table rows has a byte cap', () => {
  it('When fifty 1 MB rows are asked for, then the page stops at the cap (4 rows) with a cursor, and paging on reads every row once', async () => {
    const p = await fatProject();
    const first = await rows(p.key, { limit: 50 }).expect(200);
    expect(first.body.data.rows.map((r: { id: number }) => r.id)).toEqual([1, 2, 3, 4]);
    expect(first.body.data.rows[0].body).toHaveLength(MB);
    expect(first.body.data.pagination).toMatchObject({ hasMore: true, nextCursor: expect.any(String) });
    expect(Buffer.byteLength(first.text)).toBeLessThanOrEqual(DEFAULT_PAGE_MAX_BYTES + 4096);
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: request.Response = await rows(p.key, cursor ? { limit: 50, cursor } : { limit: 50 }).expect(200);
      expect(Buffer.byteLength(page.text)).toBeLessThanOrEqual(DEFAULT_PAGE_MAX_BYTES + 4096);
      seen.push(...page.body.data.rows.map((r: { id: number }) => r.id));
      cursor = page.body.data.pagination.nextCursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(pages).toBe(15);
    // Descending, ordered by a nullable column: the same cap over both segments of the keyset.
    const desc = await rows(p.key, { limit: 50, order_by: 'note', direction: 'desc' }).expect(200);
    expect(desc.body.data.rows).toHaveLength(4);
    // Fewer columns: the whole page in one.
    const slim = await rows(p.key, { limit: 50, columns: 'id,note' }).expect(200);
    expect(slim.body.data.rows).toHaveLength(50);
    expect(slim.body.data.rows[49]).toEqual({ id: 50, note: 'note 50' });
  });

  it('When twelve such pages are read at once, then every answer stays within the cap', async () => {
    const p = await fatProject();
    const answers = await Promise.all(Array.from({ length: 12 }, () => rows(p.key, { limit: 50 })));
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(a.body.data.rows).toHaveLength(4);
      expect(Buffer.byteLength(a.text)).toBeLessThanOrEqual(DEFAULT_PAGE_MAX_BYTES + 4096);
    }
  });

  it('When one row alone passes the cap, then 400 row_too_large names the cap and the row, and asking for fewer columns reads it', async () => {
    const p = await fatProject();
    await t.db.pool.query(`UPDATE ${p.schema}.fat SET body = repeat('y', ${5 * MB}) WHERE id = 3`);
    // Rows before it still come, on a page of their own.
    const before = await rows(p.key, { limit: 50 }).expect(200);
    expect(before.body.data.rows.map((r: { id: number }) => r.id)).toEqual([1, 2]);
    const res = await rows(p.key, { limit: 50, cursor: before.body.data.pagination.nextCursor });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: { code: 'row_too_large', details: { table: 'fat', max_bytes: DEFAULT_PAGE_MAX_BYTES, row_bytes: expect.any(Number) } } });
    expect(res.body.error.details.row_bytes).toBeGreaterThan(5 * MB);
    expect(res.body.error.message).toMatch(/4194304-byte cap.*fewer columns/);
    const slim = await rows(p.key, { limit: 50, columns: 'id,note', filters: JSON.stringify([{ column: 'id', op: 'eq', value: 3 }]) }).expect(200);
    expect(slim.body.data.rows).toEqual([{ id: 3, note: 'note 3' }]);
  });

  it("When the table's columns are named like the page query's own (n, run, sz, v0), then ordering and paging are still exact", async () => {
    const p = await t.admin.project();
    made.push(p.id);
    const key = (await t.admin.key(p.id, ['tables:read'])).secret;
    await request(t.app).post(`/admin/projects/${p.id}/tables/ddl`).set('Authorization', `Bearer ${t.adminToken}`)
      .send({ sql: 'CREATE TABLE odd (n int PRIMARY KEY, run int, sz text, v0 text)' }).expect(200);
    const schema = await physicalSchema(t.db.sql, p.id, 'public');
    await t.db.pool.query(`INSERT INTO ${schema}.odd SELECT g, g % 3, 's' || g, 'v' || g FROM generate_series(1, 9) AS g`);
    for (const [order_by, direction] of [['n', 'desc'], ['run', 'desc'], ['run', 'asc']] as const) {
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const page: request.Response = await request(t.app).get('/v1/tables/odd/rows').query({ order_by, direction, limit: 2, ...(cursor ? { cursor } : {}) })
          .set('Authorization', `Bearer ${key}`).expect(200);
        seen.push(...page.body.data.rows.map((r: { n: number }) => r.n));
        cursor = page.body.data.pagination.nextCursor;
      } while (cursor);
      const want = (await t.db.pool.query(`SELECT n FROM ${schema}.odd ORDER BY ${order_by} ${direction}, n ${direction}`)).rows.map((r) => r.n);
      expect({ order_by, direction, seen }).toEqual({ order_by, direction, seen: want });
    }
  });

  it("When the bot reads the table, then its tables.select is held to the same cap", async () => {
    const p = await fatProject();
    const deps = t.services.deps as unknown as BotDeps;
    const select = async (args: object) => JSON.parse(await runHelper(deps, { projectId: p.id, mode: 'production', logLines: 0 }, 'tables.select', JSON.stringify({ table: 'fat', ...args })));
    const page = await select({ limit: 50 });
    expect(page).toMatchObject({ ok: true });
    expect(page.value).toHaveLength(4);
    expect((await select({ limit: 50, columns: ['id'] })).value).toHaveLength(50);
  });
});

describe('a configured cap', () => {
  let small: TestApp;
  beforeAll(async () => {
    small = await startTestApp({ config: { tablesPageMaxBytes: 2500 } });
  });
  afterAll(async () => {
    await small.close();
  });

  it('When TABLES_PAGE_MAX_BYTES is small, then pages follow it, counting every projected value and the ordering key', async () => {
    const p = await small.admin.project();
    made.push(p.id);
    const key = (await small.admin.key(p.id, ['tables:read'])).secret;
    await request(small.app).post(`/admin/projects/${p.id}/tables/ddl`).set('Authorization', `Bearer ${small.adminToken}`)
      .send({ sql: 'CREATE TABLE t (id int PRIMARY KEY, v text)' }).expect(200);
    const schema = await physicalSchema(small.db.sql, p.id, 'public');
    // Each row: id (1 or 2 digits) twice (value and key) and 1000 bytes of v.
    await small.db.pool.query(`INSERT INTO ${schema}.t SELECT n, repeat('v', 1000) FROM generate_series(1, 10) AS n`);
    const page = await request(small.app).get('/v1/tables/t/rows').query({ limit: 10 }).set('Authorization', `Bearer ${key}`).expect(200);
    expect(page.body.data.rows.map((r: { id: number }) => r.id)).toEqual([1, 2]);
    expect(page.body.data.pagination.hasMore).toBe(true);
    const one = await request(small.app).get('/v1/tables/t/rows').query({ limit: 1 }).set('Authorization', `Bearer ${key}`).expect(200);
    expect(one.body.data.rows).toHaveLength(1);
    expect(one.body.data.pagination.hasMore).toBe(true);
  });
});

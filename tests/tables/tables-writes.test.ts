/**
 * Project tables, writes: PATCH and DELETE /v1/tables/{table}/rows require a non-empty filter,
 * refuse like/ilike and null comparands, report the affected count and bounded changed rows,
 * offer a dry run and a max_affected guard; every refusal leaves the table unchanged. Also the
 * statement timeout (503 query_timeout) on reads and writes.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { asProject } from '../support/console.js';
import { dropProjectStorage, physicalSchema } from '../../lib/tables/isolation.js';
import type { TableSchema } from '../../lib/tables/names.js';
import { timingBound } from '../support/retry-timing.js';

let t: TestApp;
let p: { id: string; key: string };
let other: { id: string; key: string };

async function project(scopes = ['tables:read', 'tables:write']) {
  const pr = await t.admin.project();
  return { id: pr.id, key: (await t.admin.key(pr.id, scopes)).secret };
}

beforeAll(async () => {
  t = await startTestApp({ config: { tablesStatementTimeoutMs: 300 } });
  p = await project();
  other = await project();
  await asProject(t, other.id, 'public', 'CREATE TABLE people (id integer PRIMARY KEY, name text)', "INSERT INTO people VALUES (1, 'theirs')");
});
afterAll(async () => {
  for (const q of [p, other]) await dropProjectStorage(t.db, q.id).catch(() => undefined);
  await t.close();
});

beforeEach(async () => {
  await asProject(t, 
    p.id,
    'public',
    'DROP TABLE IF EXISTS people',
    'CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL, age integer CHECK (age >= 0), email text UNIQUE)',
    "INSERT INTO people SELECT g, 'n' || g, g % 5, 'e' || g || '@x' FROM generate_series(1, 80) g",
  );
  await asProject(t, p.id, 'preview', 'DROP TABLE IF EXISTS people', 'CREATE TABLE people (id integer PRIMARY KEY, name text NOT NULL)', "INSERT INTO people VALUES (1, 'preview')");
});

async function snapshot(projectId = p.id, schema: TableSchema = 'public') {
  return (await t.db.pool.query(`SELECT * FROM ${await physicalSchema(t.db.sql, projectId, schema)}.people ORDER BY id`)).rows;
}

function patch(body: object, key = p.key) {
  return request(t.app).patch('/v1/tables/people/rows').set('Authorization', `Bearer ${key}`).send(body);
}
function del(query: Record<string, string | number | boolean>, key = p.key, table = 'people') {
  return request(t.app).delete(`/v1/tables/${table}/rows`).query(query).set('Authorization', `Bearer ${key}`);
}
const f = (...preds: object[]) => JSON.stringify(preds);

describe('updateTableRows', () => {
  it('When rows match, then they change, and the answer has the count and the new rows', async () => {
    const res = await patch({ filters: [{ column: 'age', op: 'eq', value: 0 }], set: { name: 'zero', age: '10' } }).expect(200);
    expect(res.body.data).toMatchObject({ table: 'people', schema: 'public', dry_run: false, affected: 16, rows_truncated: false });
    expect(res.body.data.rows).toHaveLength(16);
    expect(res.body.data.rows[0]).toMatchObject({ name: 'zero', age: 10 });
    const after = await snapshot();
    expect(after.filter((r) => r.name === 'zero')).toHaveLength(16);
    expect(await snapshot(p.id, 'preview')).toEqual([{ id: 1, name: 'preview' }]);
    expect(await snapshot(other.id)).toEqual([{ id: 1, name: 'theirs' }]);
  });

  it('When more than 50 rows change, then the count is exact and at most 50 rows come, flagged truncated', async () => {
    const res = await patch({ filters: [{ column: 'id', op: 'gt', value: 0 }], set: { name: 'all' } }).expect(200);
    expect(res.body.data.affected).toBe(80);
    expect(res.body.data.rows).toHaveLength(50);
    expect(res.body.data.rows_truncated).toBe(true);
  });

  it('When dry_run is set, then the count and the matching rows come and nothing changes', async () => {
    const before = await snapshot();
    const res = await patch({ filters: [{ column: 'id', op: 'lte', value: 3 }], set: { name: 'x' }, dry_run: true }).expect(200);
    expect(res.body.data).toMatchObject({ dry_run: true, affected: 3 });
    expect(res.body.data.rows.map((r: any) => r.name)).toEqual(['n1', 'n2', 'n3']);
    expect(await snapshot()).toEqual(before);
    const bad = await patch({ filters: [{ column: 'id', op: 'lte', value: 3 }], set: { age: 'old' }, dry_run: true }).expect(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_value', details: { column: 'age' } });
  });

  it('When the schema is preview, then only preview changes', async () => {
    await patch({ schema: 'preview', filters: [{ column: 'id', op: 'eq', value: 1 }], set: { name: 'changed' } }).expect(200);
    expect(await snapshot(p.id, 'preview')).toEqual([{ id: 1, name: 'changed' }]);
    expect((await snapshot())[0].name).toBe('n1');
  });

  it.each([
    [{ filters: [], set: { name: 'x' } }, 400, 'invalid_request'],
    [{ set: { name: 'x' } }, 400, 'invalid_request'],
    [{ filters: [{ column: 'id', op: 'gt', value: 0 }], set: {} }, 400, 'invalid_request'],
    [{ filters: [{ column: 'name', op: 'like', value: '%' }], set: { name: 'x' } }, 400, 'invalid_request'],
    [{ filters: [{ column: 'name', op: 'ilike', value: '%' }], set: { name: 'x' } }, 400, 'invalid_request'],
    [{ filters: [{ column: 'id', op: 'eq', value: null }], set: { name: 'x' } }, 400, 'null_filter_value'],
    [{ filters: [{ column: 'id', op: 'neq', value: 'null' }], set: { name: 'x' } }, 400, 'null_filter_value'],
    [{ filters: [{ column: 'nope', op: 'eq', value: 1 }], set: { name: 'x' } }, 400, 'unknown_column'],
    [{ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { nope: 'x' } }, 400, 'unknown_column'],
    [{ filters: [{ column: 'id', op: 'eq', value: 'one' }], set: { name: 'x' } }, 400, 'invalid_value'],
    [{ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { age: 'old' } }, 400, 'invalid_value'],
    [{ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { age: -1 } }, 409, 'conflict'],
    [{ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { name: null } }, 409, 'conflict'],
    [{ filters: [{ column: 'id', op: 'lte', value: 2 }], set: { email: 'same@x' } }, 409, 'conflict'],
    [{ filters: [{ column: 'id', op: 'gt', value: 0 }], set: { name: 'x' }, max_affected: 79 }, 409, 'max_affected_exceeded'],
    [{ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { name: { $ne: 1 } } }, 400, 'invalid_request'],
    [{ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { "name = 'x'; --": 'x' } }, 400, 'unknown_column'],
  ])('When the update is %j, then %i %s and the table is unchanged', async (body, status, code) => {
    const before = await snapshot();
    const res = await patch(body).expect(status);
    expect(res.body.error.code).toBe(code);
    expect(await snapshot()).toEqual(before);
  });

  it('When the credential lacks tables:write, then 403 insufficient_scope and nothing changes', async () => {
    const ro = await t.admin.key(p.id, ['tables:read']);
    const before = await snapshot();
    const res = await patch({ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { name: 'x' } }, ro.secret).expect(403);
    expect(res.body.error.code).toBe('insufficient_scope');
    expect(await snapshot()).toEqual(before);
  });
});

describe('deleteTableRows', () => {
  it('When rows match, then they are deleted and returned', async () => {
    const res = await del({ filters: f({ column: 'id', op: 'lte', value: 2 }) }).expect(200);
    expect(res.body.data).toMatchObject({ affected: 2, dry_run: false, rows_truncated: false });
    expect(res.body.data.rows.map((r: any) => r.id)).toEqual([1, 2]);
    expect(await snapshot()).toHaveLength(78);
    expect(await snapshot(other.id)).toHaveLength(1);
  });

  it('When dry_run=true, then the count comes and nothing is deleted; max_affected guards the real delete', async () => {
    const res = await del({ filters: f({ column: 'age', op: 'eq', value: 1 }), dry_run: true }).expect(200);
    expect(res.body.data).toMatchObject({ affected: 16, dry_run: true });
    expect(await snapshot()).toHaveLength(80);
    const guard = await del({ filters: f({ column: 'age', op: 'eq', value: 1 }), max_affected: 15 }).expect(409);
    expect(guard.body.error).toMatchObject({ code: 'max_affected_exceeded', details: { affected: 16, max_affected: 15 } });
    expect(await snapshot()).toHaveLength(80);
    await del({ filters: f({ column: 'age', op: 'eq', value: 1 }), max_affected: 16 }).expect(200);
    expect(await snapshot()).toHaveLength(64);
  });

  it.each([
    [{}, 'invalid_request'],
    [{ filters: '[]' }, 'invalid_request'],
    [{ filters: 'nope' }, 'invalid_request'],
    [{ filters: f({ column: 'name', op: 'like', value: '%' }) }, 'invalid_request'],
    [{ filters: f({ column: 'name', op: 'ilike', value: 'n%' }) }, 'invalid_request'],
    [{ filters: f({ column: 'id', op: 'eq', value: null }) }, 'null_filter_value'],
    [{ filters: f({ column: 'id', op: 'gt', value: 'NULL' }) }, 'null_filter_value'],
    [{ filters: f({ column: 'ghost', op: 'eq', value: 1 }) }, 'unknown_column'],
    [{ filters: f({ column: 'id', op: 'gt', value: '0 OR 1=1' }) }, 'invalid_value'],
    [{ filters: f({ column: 'id', op: 'gt', value: 0 }), max_affected: -1 }, 'invalid_request'],
  ])('When the delete is %j, then 400 %s and nothing is deleted', async (query, code) => {
    const res = await del(query as any).expect(400);
    expect(res.body.error.code).toBe(code);
    expect(await snapshot()).toHaveLength(80);
  });

  it('When a platform table, a view, or another project\'s table is the target, then 403/404 and nothing changes', async () => {
    await asProject(t, p.id, 'public', 'CREATE OR REPLACE VIEW people_view AS SELECT * FROM people');
    expect((await del({ filters: f({ column: 'key', op: 'neq', value: 'x' }) }, p.key, '_platform_meta').expect(403)).body.error.code).toBe('platform_table_forbidden');
    expect((await del({ filters: f({ column: 'id', op: 'gt', value: 0 }) }, p.key, 'people_view').expect(404)).body.error.code).toBe('table_not_found');
    expect((await del({ filters: f({ column: 'id', op: 'gt', value: 0 }) }, p.key, 'api_keys').expect(404)).body.error.code).toBe('table_not_found');
    expect(await snapshot()).toHaveLength(80);
    expect(await snapshot(other.id)).toHaveLength(1);
    const meta = await t.db.pool.query(`SELECT count(*)::int AS n FROM ${await physicalSchema(t.db.sql, p.id, 'public')}._platform_meta`);
    expect(meta.rows[0].n).toBeGreaterThan(0);
    await asProject(t, p.id, 'public', 'DROP VIEW people_view');
  });
});

describe('statement timeout', () => {
  beforeAll(async () => {
    // A domain whose check sleeps: any comparison that casts to it outlasts the 300 ms timeout.
    await asProject(t, 
      p.id,
      'public',
      'CREATE FUNCTION slow_ok(integer) RETURNS boolean LANGUAGE sql AS $$ SELECT pg_sleep(1) IS NOT NULL $$',
      'CREATE DOMAIN slow_int AS integer CHECK (slow_ok(VALUE))',
      'CREATE TABLE sleepy (id integer PRIMARY KEY, v slow_int)',
    );
    await t.db.pool.query(`INSERT INTO ${await physicalSchema(t.db.sql, p.id, 'public')}.sleepy VALUES (1, 1)`);
  }, 20000);

  timingBound('query_timeout within 900 ms').it('When a read outlasts the statement timeout, then 503 query_timeout, quickly', async () => {
    const started = Date.now();
    const res = await request(t.app)
      .get('/v1/tables/sleepy/rows')
      .query({ filters: f({ column: 'v', op: 'eq', value: 1 }) })
      .set('Authorization', `Bearer ${p.key}`)
      .expect(503);
    expect(res.body.error).toMatchObject({ code: 'query_timeout', details: { timeout_ms: 300 } });
    expect(Date.now() - started).toBeLessThan(900);
  });

  it('When an update outlasts the statement timeout, then 503 query_timeout and nothing changes', async () => {
    const res = await request(t.app)
      .patch('/v1/tables/sleepy/rows')
      .set('Authorization', `Bearer ${p.key}`)
      .send({ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { v: 2 } })
      .expect(503);
    expect(res.body.error.code).toBe('query_timeout');
    const r = await t.db.pool.query(`SELECT v FROM ${await physicalSchema(t.db.sql, p.id, 'public')}.sleepy`);
    expect(r.rows).toEqual([{ v: 1 }]);
  });

  it('When a row is locked by someone else past the timeout, then 503 query_timeout', async () => {
    const c = await t.db.pool.connect();
    try {
      await c.query('BEGIN');
      await c.query(`SELECT * FROM ${await physicalSchema(t.db.sql, p.id, 'public')}.people WHERE id = 1 FOR UPDATE`);
      const res = await patch({ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { name: 'x' } }).expect(503);
      expect(res.body.error.code).toBe('query_timeout');
    } finally {
      await c.query('ROLLBACK');
      c.release();
    }
  });
});

/**
 * Project tables, reads: GET /v1/tables/{table}/rows and /schema over the project's own schemas,
 * with every filter rule, ordering, exact keyset paging and the isolation between projects,
 * between preview and public, and from the service's own tables.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { TestApp } from '../support/app.js';
import { useStorageTestApp } from '../support/tables.js';
import { asProject } from '../support/console.js';
import { physicalSchema } from '../../lib/tables/isolation.js';

let t: TestApp;
const projects: string[] = [];

useStorageTestApp(projects, (app) => (t = app));

/** Runs SQL as the project's role in one of its schemas (what the operator DDL endpoint does). */
async function project(scopes = ['tables:read', 'tables:write']) {
  const p = await t.admin.project();
  projects.push(p.id);
  return { id: p.id, key: (await t.admin.key(p.id, scopes)).secret };
}

function rows(key: string, table: string, query: Record<string, string | number> = {}) {
  return request(t.app).get(`/v1/tables/${table}/rows`).query(query).set('Authorization', `Bearer ${key}`);
}

let p: { id: string; key: string };
beforeAll(async () => {
  p = await project();
  await asProject(t, 
    p.id,
    'public',
    `CREATE TABLE orders (id integer PRIMARY KEY, status text NOT NULL, note text, amount numeric(10,2), paid boolean, created_at timestamptz DEFAULT now(), data jsonb)`,
    `INSERT INTO orders VALUES
      (1, 'paid', '100% sure', 10.50, true, '2026-01-01T00:00:00Z', '{"a":1}'),
      (2, 'open', 'a_b', 20, false, '2026-01-02T00:00:00Z', null),
      (3, 'paid', 'axb', null, null, '2026-01-03T00:00:00Z', null),
      (4, 'void', 'back\\slash', 5, true, null, null),
      (5, 'null', null, 7, false, '2026-01-05T00:00:00Z', null)`,
    `CREATE VIEW paid_orders AS SELECT * FROM orders WHERE status = 'paid'`,
    `CREATE SEQUENCE some_seq`,
    `CREATE TABLE nopk (v integer)`,
    `INSERT INTO nopk SELECT g % 3 FROM generate_series(1, 7) g`,
  );
  await asProject(t, p.id, 'preview', `CREATE TABLE orders (id integer PRIMARY KEY, status text)`, `INSERT INTO orders VALUES (100, 'preview-only')`);
});

describe('listTableRows', () => {
  it('When a table is read with no options, then every column of the first 20 rows comes in primary-key order, typed', async () => {
    const res = await rows(p.key, 'orders').expect(200);
    expect(res.body.data.table).toBe('orders');
    expect(res.body.data.schema).toBe('public');
    expect(res.body.data.rows.map((r: any) => r.id)).toEqual([1, 2, 3, 4, 5]);
    expect(res.body.data.rows[0]).toEqual({
      id: 1,
      status: 'paid',
      note: '100% sure',
      amount: '10.50',
      paid: true,
      created_at: '2026-01-01 00:00:00+00',
      data: { a: 1 },
    });
    expect(res.body.data.pagination).toEqual({ hasMore: false, nextCursor: null, ordered: true });
  });

  it('When schema=preview, then the preview schema is read, and public never sees preview rows', async () => {
    const prev = await rows(p.key, 'orders', { schema: 'preview' }).expect(200);
    expect(prev.body.data.rows).toEqual([{ id: 100, status: 'preview-only' }]);
    expect(prev.body.data.schema).toBe('preview');
    const pub = await rows(p.key, 'orders', { filters: JSON.stringify([{ column: 'id', op: 'eq', value: 100 }]) }).expect(200);
    expect(pub.body.data.rows).toEqual([]);
    await rows(p.key, 'nopk', { schema: 'preview' }).expect(404);
  });

  it('When columns are given, then only those come, in that order; an unknown one is 400 unknown_column naming it', async () => {
    const res = await rows(p.key, 'orders', { columns: 'status,id', limit: 1 }).expect(200);
    expect(Object.keys(res.body.data.rows[0])).toEqual(['status', 'id']);
    const bad = await rows(p.key, 'orders', { columns: 'id,nope' }).expect(400);
    expect(bad.body.error.code).toBe('unknown_column');
    expect(bad.body.error.details.column).toBe('nope');
    expect((await rows(p.key, 'orders', { columns: 'id,,status' }).expect(400)).body.error.code).toBe('invalid_request');
    expect((await rows(p.key, 'orders', { columns: 'x'.repeat(2001) }).expect(400)).body.error.code).toBe('invalid_request');
  });

  it.each([
    [[{ column: 'status', op: 'eq', value: 'paid' }], [1, 3]],
    [[{ column: 'status', op: 'neq', value: 'paid' }], [2, 4, 5]],
    [[{ column: 'id', op: 'gt', value: 3 }], [4, 5]],
    [[{ column: 'id', op: 'gte', value: '3' }], [3, 4, 5]],
    [[{ column: 'amount', op: 'lt', value: 10 }], [4, 5]],
    [[{ column: 'amount', op: 'lte', value: 10.5 }], [1, 4, 5]],
    [[{ column: 'note', op: 'like', value: 'a%' }], [2, 3]],
    [[{ column: 'note', op: 'like', value: 'a_b' }], [2, 3]],
    [[{ column: 'note', op: 'like', value: 'a\\_b' }], [2]],
    [[{ column: 'note', op: 'like', value: '100\\%%' }], [1]],
    [[{ column: 'note', op: 'like', value: '%\\\\%' }], [4]],
    [[{ column: 'status', op: 'ilike', value: 'PA%' }], [1, 3]],
    [[{ column: 'id', op: 'like', value: '4' }], [4]],
    [[{ column: 'note', op: 'is', value: null }], [5]],
    [[{ column: 'paid', op: 'is', value: true }], [1, 4]],
    [[{ column: 'paid', op: 'is', value: 'false' }], [2, 5]],
    [[{ column: 'created_at', op: 'lt', value: '2026-01-02T12:00:00Z' }], [1, 2]],
    [[{ column: 'status', op: 'eq', value: 'paid' }, { column: 'amount', op: 'is', value: null }], [3]],
  ])('When filtered by %j, then exactly the matching rows come', async (filters, ids) => {
    const res = await rows(p.key, 'orders', { filters: JSON.stringify(filters) }).expect(200);
    expect(res.body.data.rows.map((r: any) => r.id)).toEqual(ids);
  });

  it.each([
    { filters: 'not json', code: 'invalid_request' },
    { filters: '{"column":"id"}', code: 'invalid_request' },
    { filters: JSON.stringify([{ column: 'id', op: 'in', value: 1 }]), code: 'invalid_request' },
    { filters: JSON.stringify([{ column: 'id', op: 'eq' }]), code: 'invalid_request' },
    { filters: JSON.stringify([{ column: 'id', op: 'eq', value: [1] }]), code: 'invalid_request' },
    { filters: JSON.stringify([{ column: 'id', op: 'eq', value: 1, extra: 1 }]), code: 'invalid_request' },
    { filters: JSON.stringify([{ column: 'note', op: 'like', value: 'a*' }]), code: 'invalid_request' },
    { filters: JSON.stringify([{ column: 'note', op: 'like', value: 'a\\b' }]), code: 'invalid_request' },
    { filters: JSON.stringify([{ column: 'note', op: 'is', value: 'maybe' }]), code: 'invalid_request' },
    { filters: JSON.stringify([{ column: 'note', op: 'is', value: 1 }]), code: 'invalid_request' },
    { filters: JSON.stringify([{ column: 'note', op: 'eq', value: null }]), code: 'null_filter_value' },
    { filters: JSON.stringify([{ column: 'note', op: 'neq', value: 'null' }]), code: 'null_filter_value' },
    { filters: JSON.stringify([{ column: 'note', op: 'like', value: null }]), code: 'null_filter_value' },
    { filters: JSON.stringify([{ column: 'nope', op: 'eq', value: 1 }]), code: 'unknown_column' },
    { filters: JSON.stringify([{ column: 'id', op: 'eq', value: 'abc' }]), code: 'invalid_value' },
    { filters: JSON.stringify([{ column: 'id', op: 'eq', value: 99999999999 }]), code: 'invalid_value' },
    { filters: JSON.stringify([{ column: 'created_at', op: 'gt', value: 'yesterday-ish' }]), code: 'invalid_value' },
    { filters: JSON.stringify([{ column: 'note', op: 'is', value: true }]), code: 'invalid_value' },
    { filters: JSON.stringify(Array.from({ length: 21 }, () => ({ column: 'id', op: 'gt', value: 0 }))), code: 'invalid_request' },
    { filters: JSON.stringify([{ column: 'note', op: 'eq', value: 'x'.repeat(4000) }]), code: 'invalid_request' },
  ])('When filters are malformed (case $#), then 400 $code and no database error leaks', async ({ filters, code }) => {
    const res = await rows(p.key, 'orders', { filters }).expect(400);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.message).not.toMatch(/syntax|relation|SQLSTATE/i);
  });

  it('When a value does not fit, then the 400 names the column and its type', async () => {
    const res = await rows(p.key, 'orders', { filters: JSON.stringify([{ column: 'status', op: 'eq', value: 'x' }, { column: 'id', op: 'eq', value: 'abc' }]) }).expect(400);
    expect(res.body.error.details).toEqual({ column: 'id', type: 'integer' });
  });

  it('When ordered by a nullable column, then NULLs come last ascending and first descending, primary key breaking ties', async () => {
    const asc = await rows(p.key, 'orders', { order_by: 'paid', columns: 'id' }).expect(200);
    expect(asc.body.data.rows.map((r: any) => r.id)).toEqual([2, 5, 1, 4, 3]);
    const desc = await rows(p.key, 'orders', { order_by: 'paid', direction: 'desc', columns: 'id' }).expect(200);
    expect(desc.body.data.rows.map((r: any) => r.id)).toEqual([3, 4, 1, 5, 2]);
    const bad = await rows(p.key, 'orders', { order_by: 'nope' }).expect(400);
    expect(bad.body.error).toMatchObject({ code: 'unknown_column', details: { column: 'nope', where: 'order_by' } });
  });

  it('When the page size is out of 1..50, then 400; the default is 20', async () => {
    await rows(p.key, 'orders', { limit: 0 }).expect(400);
    await rows(p.key, 'orders', { limit: 51 }).expect(400);
    await asProject(t, p.id, 'public', 'CREATE TABLE many (id integer PRIMARY KEY)', 'INSERT INTO many SELECT generate_series(1, 60)');
    const res = await rows(p.key, 'many').expect(200);
    expect(res.body.data.rows).toHaveLength(20);
    expect(res.body.data.pagination.hasMore).toBe(true);
    const full = await rows(p.key, 'many', { limit: 50 }).expect(200);
    expect(full.body.data.rows).toHaveLength(50);
  });

  it('When a table has no primary key and no order_by, then it is read unordered and flagged so, each row once', async () => {
    const seen: number[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const res = await rows(p.key, 'nopk', { limit: 2, ...(cursor ? { cursor } : {}) }).expect(200);
      expect(res.body.data.pagination.ordered).toBe(false);
      seen.push(...res.body.data.rows.map((r: any) => r.v));
      cursor = res.body.data.pagination.nextCursor ?? undefined;
      if (!cursor) break;
    }
    expect(seen.sort()).toEqual([0, 0, 1, 1, 1, 2, 2]);
  });
});

describe('table addressing', () => {
  it('When a view, a sequence or an unknown table is addressed, then 404 table_not_found', async () => {
    for (const name of ['paid_orders', 'some_seq', 'orders_pkey', 'nothing_here']) {
      const res = await rows(p.key, name).expect(404);
      expect(res.body.error.code).toBe('table_not_found');
      expect((await request(t.app).get(`/v1/tables/${name}/schema`).set('Authorization', `Bearer ${p.key}`).expect(404)).body.error.code).toBe('table_not_found');
    }
  });

  it('When a platform table is addressed, then 403 platform_table_forbidden, whether or not it exists', async () => {
    for (const name of ['_platform_meta', '_platform_cursor_positions', '_platform_whatever']) {
      expect((await rows(p.key, name).expect(403)).body.error.code).toBe('platform_table_forbidden');
      expect((await rows(p.key, name, { cursor: 'forged.cursor' }).expect(403)).body.error.code).toBe('platform_table_forbidden');
      expect((await request(t.app).get(`/v1/tables/${name}/schema`).set('Authorization', `Bearer ${p.key}`).expect(403)).body.error.code).toBe(
        'platform_table_forbidden',
      );
    }
  });

  it("When another project's table or the service's tables are addressed by any spelling, then a 4xx and nothing leaks", async () => {
    const other = await project();
    await asProject(t, other.id, 'public', 'CREATE TABLE secrets (id integer PRIMARY KEY, s text)', "INSERT INTO secrets VALUES (1, 'theirs')");
    expect((await rows(other.key, 'secrets').expect(200)).body.data.rows).toHaveLength(1);
    expect((await rows(p.key, 'secrets').expect(404)).body.error.code).toBe('table_not_found');
    for (const name of ['api_keys', 'projects', 'pg_authid', 'pg_class', '_prisma_migrations', 'agenda_jobs']) {
      expect((await rows(p.key, name).expect(404)).body.error.code).toBe('table_not_found');
    }
    const spellings = [
      '"secrets"',
      'SECRETS',
      'Secrets',
      `${await physicalSchema(t.db.sql, other.id, 'public')}.secrets`,
      'public.api_keys',
      'pg_catalog.pg_authid',
      'pg_catalog.pg_class',
      'secrets;drop table orders',
      "secrets' or '1'='1",
      '%22api_keys%22',
      'api_keys--',
      '1orders',
      'a'.repeat(64),
    ];
    for (const name of spellings) {
      const res = await request(t.app).get(`/v1/tables/${encodeURIComponent(name)}/rows`).set('Authorization', `Bearer ${p.key}`);
      expect([400, 404]).toContain(res.status);
      expect(res.body.success).toBe(false);
    }
    expect((await rows(p.key, 'orders').expect(200)).body.data.rows).toHaveLength(5);
  });

  it('When the project role is used directly, then PostgreSQL itself refuses other projects and the service tables', async () => {
    const other = await project();
    await asProject(t, other.id, 'public', 'CREATE TABLE theirs (id integer PRIMARY KEY)');
    const attempts = [`SELECT * FROM ${await physicalSchema(t.db.sql, other.id, 'public')}.theirs`, 'SELECT * FROM public.api_keys', 'SELECT * FROM public.projects', 'SELECT * FROM _platform_meta'];
    for (const sql of attempts) {
      await expect(asProject(t, p.id, 'public', sql)).rejects.toMatchObject({ code: expect.stringMatching(/^(42501|42P01|3F000)$/) });
    }
  });

  it('When order_by or columns carry injection attempts, then 400 and nothing changes', async () => {
    for (const order_by of ['id desc', 'id;drop table orders', '"id"', 'id--', '(select 1)', 'ID', 'pg_catalog.pg_class']) {
      const res = await rows(p.key, 'orders', { order_by }).expect(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    for (const columns of ['id,(select 1)', 'id;drop table orders', '*', 'id, "status"', 'pg_catalog.pg_authid.rolpassword', 'ctid', 'xmin']) {
      const res = await rows(p.key, 'orders', { columns }).expect(400);
      expect(res.body.error.code).toBe('unknown_column');
    }
    for (const direction of ['sideways', 'asc; drop table orders']) {
      expect((await rows(p.key, 'orders', { direction }).expect(400)).body.error.code).toBe('invalid_request');
    }
    for (const schema of ['private', 'pg_catalog', 'public; drop table orders', await physicalSchema(t.db.sql, p.id, 'public')]) {
      expect((await rows(p.key, 'orders', { schema }).expect(400)).body.error.code).toBe('invalid_request');
    }
    const res = await rows(p.key, 'orders', { columns: 'id', filters: JSON.stringify([{ column: 'status', op: 'eq', value: "paid' OR '1'='1" }]) }).expect(200);
    expect(res.body.data.rows).toEqual([]);
    expect((await rows(p.key, 'orders').expect(200)).body.data.rows).toHaveLength(5);
  });

  it('When the credential lacks tables:read, then 403 insufficient_scope', async () => {
    const q = await project(['contacts:read']);
    expect((await rows(q.key, 'orders').expect(403)).body.error.code).toBe('insufficient_scope');
  });
});

describe('getTableSchema', () => {
  it('When a table is described, then each column has name, type, nullable, default and primary-key flag', async () => {
    const res = await request(t.app).get('/v1/tables/orders/schema').set('Authorization', `Bearer ${p.key}`).expect(200);
    expect(res.body.data.table).toBe('orders');
    expect(res.body.data.schema).toBe('public');
    expect(res.body.data.columns).toEqual([
      { name: 'id', type: 'integer', nullable: false, default_value: null, is_primary_key: true },
      { name: 'status', type: 'text', nullable: false, default_value: null, is_primary_key: false },
      { name: 'note', type: 'text', nullable: true, default_value: null, is_primary_key: false },
      { name: 'amount', type: 'numeric(10,2)', nullable: true, default_value: null, is_primary_key: false },
      { name: 'paid', type: 'boolean', nullable: true, default_value: null, is_primary_key: false },
      { name: 'created_at', type: 'timestamp with time zone', nullable: true, default_value: 'now()', is_primary_key: false },
      { name: 'data', type: 'jsonb', nullable: true, default_value: null, is_primary_key: false },
    ]);
    const prev = await request(t.app).get('/v1/tables/orders/schema?schema=preview').set('Authorization', `Bearer ${p.key}`).expect(200);
    expect(prev.body.data.columns.map((c: any) => c.name)).toEqual(['id', 'status']);
  });
});

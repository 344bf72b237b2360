/**
 * Project tables, paging: keyset pages are exact (every row exactly once, in order) over random data
 * with duplicate and NULL sort values at page sizes 1 to 7, in both directions, with composite keys
 * and long sort values; cursors are opaque, at most 200 characters, tamper-evident and bound to
 * their query.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { asProject } from '../support/console.js';
import { dropProjectStorage, physicalSchema, withProjectTx } from '../../lib/tables/isolation.js';
import { readRows, rowsScope } from '../../lib/tables/rows.js';
import { pgTx } from '../../lib/platform/db/tx.js';
import { canonicalFilters, parseFilterText } from '../../lib/tables/filters.js';
import { encodeCursorUnchecked } from '../../lib/platform/cursor.js';
import { testDatabaseUrl } from '../support/db.js';
import pg from 'pg';
import { randomBytes } from 'node:crypto';

let t: TestApp;
let p: { id: string; key: string };

/** A deterministic pseudo-random sequence (the failure of a seed can be replayed). */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Mostly NULLs and two values, ids shuffled: the NULL boundary falls at every page offset. */
function sparseRows(): string[] {
  const r = rng(987);
  const ids = Array.from({ length: 40 }, (_, i) => i + 1).sort(() => r() - 0.5);
  return ids.map((id) => `(${id}, ${r() < 0.6 ? 'NULL' : Math.floor(r() * 2)})`);
}

beforeAll(async () => {
  t = await startTestApp({ config: { rateLimitPerMinute: 1_000_000 } });
  const pr = await t.admin.project();
  p = { id: pr.id, key: (await t.admin.key(pr.id, ['tables:read'])).secret };
  const r = rng(12345);
  const values: string[] = [];
  for (let i = 1; i <= 60; i++) {
    const grade = r() < 0.3 ? 'NULL' : String(Math.floor(r() * 4));
    const a = Math.floor(r() * 3);
    const label = r() < 0.25 ? 'NULL' : `'${'x'.repeat(150 + Math.floor(r() * 3))}${Math.floor(r() * 3)}'`;
    values.push(`(${a}, ${i}, ${grade}, ${label}, ${r() < 0.5})`);
  }
  await asProject(t, 
    p.id,
    'public',
    'CREATE TABLE items (a integer NOT NULL, b integer NOT NULL, grade integer, label text, flag boolean NOT NULL, PRIMARY KEY (a, b))',
    `INSERT INTO items VALUES ${values.join(', ')}`,
    'CREATE TABLE sparse (id integer PRIMARY KEY, grade integer)',
    `INSERT INTO sparse VALUES ${sparseRows().join(', ')}`,
    `CREATE TABLE typed (id integer PRIMARY KEY, f float8, ts timestamptz, num numeric, u uuid, t text, d date, iv interval, b bytea)`,
    `INSERT INTO typed VALUES
      (1, 0.1, '2026-01-01 00:00:00.123456+00', 1.000000000000000000001, '00000000-0000-0000-0000-000000000001', 'a''b', '2026-01-01', '1 day', '\\x00'),
      (2, 0.1 + 0.2, '2026-01-01 00:00:00.123457+00', 1.000000000000000000002, '00000000-0000-0000-0000-000000000002', 'a\\b', '2026-01-02', '25 hours', '\\x01'),
      (3, 1e-300, '2026-01-01 00:00:00.123456+00', 1.000000000000000000001, '00000000-0000-0000-0000-000000000001', 'ä"b', '2026-01-01', '1 day 1 hour', '\\x00ff'),
      (4, -0.0, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
      (5, 'Infinity', '2026-01-01 00:00:00.123456+00', -1, '00000000-0000-0000-0000-000000000003', 'a''b', '2025-12-31', '-1 day', '\\x00'),
      (6, 0.30000000000000004, '2025-06-01 12:00:00+00', 1e20, '00000000-0000-0000-0000-000000000002', '🙂', '2026-01-01', '1 day', '\\x01'),
      (7, 'NaN', '2026-01-01 00:00:00.123456+00', 1.000000000000000000001, '00000000-0000-0000-0000-000000000001', 'a\\b', '2026-01-02', '24 hours', '\\x00')`,
    'CREATE TABLE longkeys (k text PRIMARY KEY, n integer)',
    `INSERT INTO longkeys SELECT repeat('k', 300) || g, g % 2 FROM generate_series(1, 9) g`,
  );
});
afterAll(async () => {
  await dropProjectStorage(t.db, p.id).catch(() => undefined);
  await t.close();
});

async function pageAll(table: string, query: Record<string, string | number>, limit: number) {
  const out: any[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 200; i++) {
    const res = await request(t.app)
      .get(`/v1/tables/${table}/rows`)
      .query({ ...query, limit, ...(cursor ? { cursor } : {}) })
      .set('Authorization', `Bearer ${p.key}`);
    expect(res.status).toBe(200);
    const { rows, pagination } = res.body.data;
    expect(rows.length).toBeLessThanOrEqual(limit);
    out.push(...rows);
    if (pagination.nextCursor) expect(pagination.nextCursor.length).toBeLessThanOrEqual(200);
    if (!pagination.hasMore) {
      expect(pagination.nextCursor).toBeNull();
      return out;
    }
    expect(rows.length).toBe(limit);
    cursor = pagination.nextCursor;
  }
  throw new Error('paging did not end');
}

async function expected(table: string, orderSql: string, whereSql = 'TRUE') {
  const r = await t.db.pool.query(`SELECT * FROM ${await physicalSchema(t.db.sql, p.id, 'public')}.${table} WHERE ${whereSql} ORDER BY ${orderSql}`);
  return r.rows;
}

const key = (r: any) => `${r.a}/${r.b}`;

describe('listTableRows paging', () => {
  const cases: Array<{ order_by?: string; direction?: 'asc' | 'desc'; order: string; filter?: [object, string] }> = [
    { order: 'a, b' },
    { direction: 'desc', order: 'a DESC, b DESC' },
    { order_by: 'grade', order: 'grade ASC NULLS LAST, a, b' },
    { order_by: 'grade', direction: 'desc', order: 'grade DESC NULLS FIRST, a DESC, b DESC' },
    { order_by: 'label', order: 'label ASC NULLS LAST, a, b' },
    { order_by: 'label', direction: 'desc', order: 'label DESC NULLS FIRST, a DESC, b DESC' },
    { order_by: 'flag', order: 'flag, a, b' },
    { order_by: 'b', direction: 'desc', order: 'b DESC, a DESC' },
    { order_by: 'grade', order: 'grade ASC NULLS LAST, a, b', filter: [{ column: 'flag', op: 'eq', value: true }, 'flag'] },
    { order_by: 'grade', direction: 'desc', order: 'grade DESC NULLS FIRST, a DESC, b DESC', filter: [{ column: 'a', op: 'lte', value: 1 }, 'a <= 1'] },
  ];
  for (const c of cases) {
    it(`When paged by ${c.order_by ?? 'the primary key'} ${c.direction ?? 'asc'}${c.filter ? ' with a filter' : ''} at page sizes 1..7, then every row comes exactly once, in order`, async () => {
      const want = (await expected('items', c.order, c.filter?.[1])).map(key);
      expect(want.length).toBeGreaterThan(10);
      const query: Record<string, string> = {};
      if (c.order_by) query.order_by = c.order_by;
      if (c.direction) query.direction = c.direction;
      if (c.filter) query.filters = JSON.stringify([c.filter[0]]);
      for (let size = 1; size <= 7; size++) {
        const got = (await pageAll('items', query, size)).map(key);
        expect(got).toEqual(want);
      }
    });
  }

  it('When most sort values are NULL and the rest duplicates, then paging is exact in both directions at page sizes 1..7', async () => {
    for (const direction of ['asc', 'desc']) {
      const want = (await expected('sparse', direction === 'asc' ? 'grade ASC NULLS LAST, id' : 'grade DESC NULLS FIRST, id DESC')).map((r) => r.id);
      for (let size = 1; size <= 7; size++) {
        const got = (await pageAll('sparse', { order_by: 'grade', direction }, size)).map((r) => r.id);
        expect(got).toEqual(want);
      }
    }
  });

  it('When sorted by columns of many types (floats, timestamps with microseconds, numeric, uuid, text, date, interval, bytea), then positions round-trip exactly', async () => {
    for (const column of ['f', 'ts', 'num', 'u', 't', 'd', 'iv', 'b']) {
      for (const direction of ['asc', 'desc']) {
        const dir = direction === 'asc' ? 'ASC NULLS LAST' : 'DESC NULLS FIRST';
        const want = (await expected('typed', `${column} ${dir}, id ${direction}`)).map((r) => r.id);
        for (const size of [1, 2, 3]) {
          const got = (await pageAll('typed', { order_by: column, direction }, size)).map((r) => r.id);
          expect({ column, direction, size, got }).toEqual({ column, direction, size, got: want });
        }
      }
    }
  });

  it('When the primary key itself is longer than a cursor can carry, then paging is still exact', async () => {
    for (const direction of ['asc', 'desc']) {
      for (const size of [1, 2, 4]) {
        const got = (await pageAll('longkeys', { direction, order_by: 'n' }, size)).map((r) => r.k);
        const want = (await expected('longkeys', direction === 'asc' ? 'n, k' : 'n DESC, k DESC')).map((r) => r.k);
        expect(got).toEqual(want);
      }
    }
  });
});

describe('connections', () => {
  it('When the pool has a single connection, then paging with stored positions completes (a request never holds two)', async () => {
    const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 1, connectionTimeoutMillis: 3000 });
    pool.on('error', () => undefined);
    try {
      const settings = { statementTimeoutMs: 5000, cursorSecret: randomBytes(32) };
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 20; i++) {
        const page = await readRows({ pool, sql: pgTx(pool) }, settings, { projectId: p.id, table: 'longkeys', schema: 'public', limit: 4, cursor });
        seen.push(...page.rows.map((r) => String(r.k)));
        if (!page.pagination.nextCursor) break;
        expect(page.pagination.nextCursor.length).toBeLessThanOrEqual(200);
        cursor = page.pagination.nextCursor;
      }
      expect(seen).toHaveLength(9);
      expect(new Set(seen).size).toBe(9);
    } finally {
      await pool.end();
    }
  });
});

describe('random tables', () => {
  it('When many random tables (NULL rates, duplicate rates, composite keys, filters) are paged at sizes 1..7 both ways, then every row comes exactly once, in order', async () => {
    const settings = { statementTimeoutMs: 5000, cursorSecret: randomBytes(32) };
    for (let seed = 1; seed <= 8; seed++) {
      const r = rng(seed * 7919);
      const nullRate = r();
      const distinct = 1 + Math.floor(r() * 5);
      const n = 5 + Math.floor(r() * 25);
      const values = Array.from({ length: n }, (_, i) => `(${i % 3}, ${i}, ${r() < nullRate ? 'NULL' : Math.floor(r() * distinct)}, ${r() < 0.5})`);
      const table = `rnd_${seed}`;
      await asProject(t, p.id, 'public', `CREATE TABLE ${table} (a integer, b integer, v integer, ok boolean NOT NULL, PRIMARY KEY (a, b))`, `INSERT INTO ${table} VALUES ${values.join(', ')}`);
      const filtered = r() < 0.5;
      for (const direction of ['asc', 'desc'] as const) {
        const order = direction === 'asc' ? 'v ASC NULLS LAST, a, b' : 'v DESC NULLS FIRST, a DESC, b DESC';
        const want = (await expected(table, order, filtered ? 'ok' : 'TRUE')).map(key);
        for (let size = 1; size <= 7; size++) {
          const got: string[] = [];
          let cursor: string | undefined;
          for (let i = 0; i < 100; i++) {
            const page = await readRows(t.db, settings, {
              projectId: p.id, table, schema: 'public', orderBy: 'v', direction, limit: size, cursor,
              filters: filtered ? JSON.stringify([{ column: 'ok', op: 'is', value: true }]) : undefined,
            });
            got.push(...page.rows.map(key));
            if (!page.pagination.hasMore) break;
            cursor = page.pagination.nextCursor!;
          }
          expect({ seed, direction, size, got }).toEqual({ seed, direction, size, got: want });
        }
      }
    }
  }, 60000);
});

describe('cursor format', () => {
  it('When a cursor is built from the row keys, the query scope and the secret (as the bench does), then it equals the one the service issues', async () => {
    const secret = randomBytes(32);
    const settings = { statementTimeoutMs: 5000, cursorSecret: secret };
    const request = { projectId: p.id, table: 'items', schema: 'public' as const, orderBy: 'grade', limit: 3, filters: JSON.stringify([{ column: 'flag', op: 'eq', value: true }]) };
    const page = await readRows(t.db, settings, request);
    const last = page.rows[page.rows.length - 1];
    const position = [last.grade === null ? null : String(last.grade), String(last.a), String(last.b)];
    const scope = rowsScope(request, canonicalFilters(parseFilterText(request.filters)));
    expect(page.pagination.nextCursor).toBe(encodeCursorUnchecked(['i', ...position], scope, secret));
  });
});

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('table cursors', () => {
  async function firstCursor(query: Record<string, string>) {
    const res = await request(t.app).get('/v1/tables/items/rows').query({ ...query, limit: 2 }).set('Authorization', `Bearer ${p.key}`).expect(200);
    return res.body.data.pagination.nextCursor as string;
  }
  function get(query: Record<string, string>) {
    return request(t.app).get('/v1/tables/items/rows').query({ ...query, limit: 2 }).set('Authorization', `Bearer ${p.key}`);
  }

  it('When a cursor is reused with another ordering, direction, filter or schema, then 400 invalid_cursor', async () => {
    const base = { order_by: 'grade', filters: JSON.stringify([{ column: 'a', op: 'gte', value: 0 }]) };
    const cursor = await firstCursor(base);
    await get({ ...base, cursor }).expect(200);
    for (const other of [
      { ...base, order_by: 'label' },
      { ...base, direction: 'desc' },
      { ...base, filters: JSON.stringify([{ column: 'a', op: 'gte', value: 1 }]) },
      { order_by: 'grade' },
      { ...base, schema: 'preview' },
    ]) {
      const res = await get({ ...other, cursor });
      expect([400, 404]).toContain(res.status);
      if (res.status === 400) expect(res.body.error.code).toBe('invalid_cursor');
    }
    const res = await request(t.app).get('/v1/tables/longkeys/rows').query({ order_by: 'grade', cursor }).set('Authorization', `Bearer ${p.key}`);
    expect(res.status).toBe(400);
  });

  it('When a cursor is tampered with, forged or injected, then 400 invalid_cursor and nothing else happens', async () => {
    const cursor = await firstCursor({});
    const [payload, mac] = cursor.split('.');
    const forged = Buffer.from(JSON.stringify(['i', "0'; DROP TABLE items; --", '1'])).toString('base64url');
    for (const bad of [
      `${forged}.${mac}`,
      `${payload}.${mac.slice(0, -2)}${mac.endsWith('AA') ? 'BB' : 'AA'}`,
      `${payload}.${mac.slice(0, -1)}${B64URL[B64URL.indexOf(mac[mac.length - 1]) ^ 1]}`, // same bytes: only a spare bit differs
      `${payload}x.${mac}`,
      'garbage',
      "1' OR '1'='1",
      '',
      'a'.repeat(201),
    ]) {
      const res = await get({ cursor: bad });
      expect(res.status).toBe(400);
      expect(['invalid_cursor', 'invalid_request']).toContain(res.body.error.code);
    }
    expect((await get({ limit: '50' } as any).query({ limit: 50 })).body.data.rows.length).toBe(50);
  });

  it('When another project presents a cursor, then 400 invalid_cursor', async () => {
    const cursor = await firstCursor({});
    const q = await t.admin.project();
    const key = (await t.admin.key(q.id, ['tables:read'])).secret;
    await withProjectTx(t.db, q.id, { readOnly: false, statementTimeoutMs: 5000, schema: 'public', ddl: true }, (c) =>
      c.query('CREATE TABLE items (a integer NOT NULL, b integer NOT NULL, PRIMARY KEY (a, b))'),
    );
    const res = await request(t.app).get('/v1/tables/items/rows').query({ cursor }).set('Authorization', `Bearer ${key}`).expect(400);
    expect(res.body.error.code).toBe('invalid_cursor');
    await dropProjectStorage(t.db, q.id);
  });
});

/**
 * Project tables, inserts: POST /v1/tables/{table}/rows adds 1 to 50 rows in one transaction
 * (defaults for the columns left out), shows a dry run without keeping anything, is judged against
 * the storage quota before it runs, replays a retry with its Idempotency-Key, and refuses wrong
 * types, unknown columns, platform tables and a key without tables:write, leaving the table as it was.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { asProject } from '../support/console.js';
import { dropProjectStorage, physicalSchema } from '../../lib/tables/isolation.js';
import type { TableSchema } from '../../lib/tables/names.js';

let t: TestApp;
let p: { id: string; key: string };

async function project(scopes = ['tables:read', 'tables:write']) {
  const pr = await t.admin.project();
  return { id: pr.id, key: (await t.admin.key(pr.id, scopes)).secret };
}

const post = (body: object, key = p.key, table = 'opening_hours') =>
  request(t.app).post(`/v1/tables/${table}/rows`).set('Authorization', `Bearer ${key}`).send(body);

async function stored(schema: TableSchema = 'public') {
  return (await t.db.pool.query(`SELECT * FROM ${await physicalSchema(t.db.sql, p.id, schema)}.opening_hours ORDER BY id`)).rows;
}

beforeAll(async () => {
  t = await startTestApp();
  p = await project();
});
afterAll(async () => {
  await dropProjectStorage(t.db, p.id).catch(() => undefined);
  await t.close();
});

beforeEach(async () => {
  for (const schema of ['public', 'preview'] as const) {
    await asProject(t, 
      p.id,
      schema,
      'DROP TABLE IF EXISTS opening_hours',
      `CREATE TABLE opening_hours (id serial PRIMARY KEY, weekday integer NOT NULL CHECK (weekday BETWEEN 0 AND 6) UNIQUE,
         opens time NOT NULL, closes time NOT NULL, note text, open boolean NOT NULL DEFAULT true)`,
    );
  }
});

describe('insertTableRows', () => {
  it('When a shop types its opening hours, then the rows are stored with their defaults and come back as stored', async () => {
    const res = await post({ rows: [{ weekday: 1, opens: '09:00', closes: '18:00' }, { weekday: 6, opens: '10:00', closes: '14:00', note: 'Saturday: short day', open: false }] }).expect(201);
    expect(res.body.data).toMatchObject({ table: 'opening_hours', schema: 'public', dry_run: false, affected: 2, rows_truncated: false });
    expect(res.body.data.rows).toEqual([
      { id: 1, weekday: 1, opens: '09:00:00', closes: '18:00:00', note: null, open: true },
      { id: 2, weekday: 6, opens: '10:00:00', closes: '14:00:00', note: 'Saturday: short day', open: false },
    ]);
    expect(await stored()).toHaveLength(2);
    expect(await stored('preview')).toHaveLength(0);
    // The preview schema, by name.
    await post({ schema: 'preview', rows: [{ weekday: 0, opens: '11:00', closes: '12:00' }] }).expect(201);
    expect(await stored('preview')).toHaveLength(1);
  });

  it('When it is a dry run, then the answer shows the rows as they would be stored and nothing is kept', async () => {
    const res = await post({ dry_run: true, rows: [{ weekday: 2, opens: '08:00', closes: '17:00' }] }).expect(200);
    expect(res.body.data).toMatchObject({ dry_run: true, affected: 1, rows: [{ weekday: 2, opens: '08:00:00', open: true, note: null }] });
    expect(await stored()).toEqual([]);
    // A dry run checks the constraints as the insert would.
    await post({ rows: [{ weekday: 2, opens: '08:00', closes: '17:00' }] }).expect(201);
    const dup = await post({ dry_run: true, rows: [{ weekday: 2, opens: '09:00', closes: '17:00' }] }).expect(409);
    expect(dup.body.error.code).toBe('conflict');
    expect(await stored()).toHaveLength(1);
  });

  it('When the same insert is retried with its Idempotency-Key, then its rows are added once and the answer replayed', async () => {
    const send = () => post({ rows: [{ weekday: 3, opens: '09:00', closes: '18:00' }] }).set('Idempotency-Key', 'hours-wednesday');
    const first = await send().expect(201);
    const again = await send().expect(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(await stored()).toHaveLength(1);
  });

  it('When a value, a column, a row or the table is wrong, then it is refused with its code and nothing is written', async () => {
    const wrongType = await post({ rows: [{ weekday: 'monday', opens: '09:00', closes: '18:00' }] }).expect(400);
    expect(wrongType.body.error).toMatchObject({ code: 'invalid_value', details: { column: 'weekday', type: 'integer' } });
    const badTime = await post({ rows: [{ weekday: 1, opens: '25:99', closes: '18:00' }] }).expect(400);
    expect(badTime.body.error.details.column).toBe('opens');
    const unknown = await post({ rows: [{ weekday: 1, opens: '09:00', closes: '18:00', colour: 'red' }] }).expect(400);
    expect(unknown.body.error).toMatchObject({ code: 'unknown_column', details: { column: 'colour' } });
    const nested = await post({ rows: [{ weekday: 1, opens: '09:00', closes: '18:00', note: { html: '<b>' } }] }).expect(400);
    expect(nested.body.error.code).toBe('invalid_request');
    expect((await post({ rows: [] }).expect(400)).body.error.code).toBe('invalid_request');
    const many = Array.from({ length: 51 }, (_, i) => ({ weekday: i % 7, opens: '09:00', closes: '18:00' }));
    expect((await post({ rows: many }).expect(400)).body.error.code).toBe('invalid_request');
    expect((await post({ rows: [{ weekday: 1 }], extra: true }).expect(400)).body.error.code).toBe('invalid_request');
    // One bad row of two: neither is written.
    const check = await post({ rows: [{ weekday: 1, opens: '09:00', closes: '18:00' }, { weekday: 9, opens: '09:00', closes: '18:00' }] }).expect(409);
    expect(check.body.error.code).toBe('conflict');
    const missing = await post({ rows: [{ weekday: 1 }] }).expect(409);
    expect(missing.body.error).toMatchObject({ code: 'conflict', details: { column: 'opens' } });
    expect((await post({ rows: [{ a: 1 }] }, p.key, 'nowhere').expect(404)).body.error.code).toBe('table_not_found');
    expect((await post({ rows: [{ key: 'x', value: 'y' }] }, p.key, '_platform_meta').expect(403)).body.error.code).toBe('platform_table_forbidden');
    expect(await stored()).toEqual([]);
  });

  it('When the rows would pass the storage quota, then 409 table_quota_exceeded before anything is written', async () => {
    const quota = await request(t.app).get(`/admin/projects/${p.id}/tables/quota`).set('Authorization', `Bearer ${t.adminToken}`).expect(200);
    const usage = quota.body.data.schemas.find((s: { schema: string }) => s.schema === 'public');
    await request(t.app).put(`/admin/projects/${p.id}/tables/quota`).set('Authorization', `Bearer ${t.adminToken}`).send({ schema: 'public', max_rows: usage.rows + 1 }).expect(200);
    try {
      const over = await post({ rows: [{ weekday: 1, opens: '09:00', closes: '18:00' }, { weekday: 2, opens: '09:00', closes: '18:00' }] }).expect(409);
      expect(over.body.error).toMatchObject({ code: 'table_quota_exceeded', details: { schema: 'public', max_rows: usage.rows + 1 } });
      // A dry run is judged the same way.
      expect((await post({ dry_run: true, rows: [{ weekday: 1, opens: '09:00', closes: '18:00' }, { weekday: 2, opens: '09:00', closes: '18:00' }] }).expect(409)).body.error.code).toBe('table_quota_exceeded');
      expect(await stored()).toEqual([]);
      await post({ rows: [{ weekday: 1, opens: '09:00', closes: '18:00' }] }).expect(201);
      await request(t.app).put(`/admin/projects/${p.id}/tables/quota`).set('Authorization', `Bearer ${t.adminToken}`).send({ schema: 'public', max_bytes: 1 }).expect(200);
      const bytes = await post({ rows: [{ weekday: 3, opens: '09:00', closes: '18:00' }] }).expect(409);
      expect(bytes.body.error.code).toBe('table_quota_exceeded');
    } finally {
      await request(t.app).put(`/admin/projects/${p.id}/tables/quota`).set('Authorization', `Bearer ${t.adminToken}`).send({ schema: 'public', max_rows: null, max_bytes: null }).expect(200);
    }
    expect(await stored()).toHaveLength(1);
  });

  it('When the key holds tables:read only (a member\'s key), then 403 insufficient_scope and nothing is written', async () => {
    const reader = (await t.admin.key(p.id, ['tables:read'])).secret;
    const res = await post({ rows: [{ weekday: 1, opens: '09:00', closes: '18:00' }] }, reader).expect(403);
    expect(res.body.error.code).toBe('insufficient_scope');
    expect(await stored()).toEqual([]);
  });
});

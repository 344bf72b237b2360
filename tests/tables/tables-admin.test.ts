/**
 * Project tables, operators: create tables and run DDL in a project's public and preview schemas
 * through the operator API and the CLI, and copy preview's structure to public. Statements that
 * could leave the project's role (SET, RESET, DO, functions, several statements) are refused.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { TestApp } from '../support/app.js';
import { tablesHarness } from '../support/tables.js';
import { physicalSchema } from '../../lib/tables/isolation.js';
import { runOps } from '../support/ops.js';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

let t: TestApp;
let url: string;
const h = tablesHarness({ listen: true }, (started) => ({ t, url } = started));
const made = h.made;

const project = () => h.project();

function admin(method: 'get' | 'post', path: string, body?: object) {
  const req = request(t.app)[method](path).set('Authorization', `Bearer ${t.adminToken}`);
  return body ? req.send(body) : req;
}

const ops = (args: string[]) => runOps(url, t.adminToken, args);

describe('adminCreateTable', () => {
  it('When an operator creates a table, then the project reads it through /v1 and it is listed', async () => {
    const p = await project();
    const res = await admin('post', `/admin/projects/${p.id}/tables`, {
      schema: 'preview',
      name: 'orders',
      columns: [
        { name: 'id', type: 'bigint', primary_key: true },
        { name: 'total', type: 'numeric(10,2)', nullable: false, default: '0' },
        { name: 'placed_at', type: 'timestamp with time zone', default: 'now()' },
        { name: 'tags', type: 'text[]' },
      ],
    });
    expect({ status: res.status, body: res.body.error }).toEqual({ status: 201, body: undefined });
    expect(res.body.data.columns).toEqual([
      { name: 'id', type: 'bigint', nullable: false, default_value: null, is_primary_key: true },
      { name: 'total', type: 'numeric(10,2)', nullable: false, default_value: '0', is_primary_key: false },
      { name: 'placed_at', type: 'timestamp with time zone', nullable: true, default_value: 'now()', is_primary_key: false },
      { name: 'tags', type: 'text[]', nullable: true, default_value: null, is_primary_key: false },
    ]);
    await request(t.app).get('/v1/tables/orders/rows?schema=preview').set('Authorization', `Bearer ${p.key}`).expect(200);
    await request(t.app).get('/v1/tables/orders/rows').set('Authorization', `Bearer ${p.key}`).expect(404);
    const list = await admin('get', `/admin/projects/${p.id}/tables?schema=preview`).expect(200);
    expect(list.body.data.tables.map((x: any) => x.name)).toEqual(['orders']);
    expect((await admin('get', `/admin/projects/${p.id}/tables`).expect(200)).body.data.tables).toEqual([]);
  });

  it.each([
    [{ name: 'Bad-Name', columns: [{ name: 'id', type: 'int' }] }, 400],
    [{ name: 'ok', columns: [{ name: 'id', type: 'int); DROP TABLE x; --' }] }, 400],
    [{ name: 'ok', columns: [{ name: 'id', type: 'int', default: '1; DROP TABLE x' }] }, 400],
    [{ name: 'ok', columns: [{ name: 'id', type: 'no_such_type' }] }, 400],
    [{ name: 'ok', columns: [{ name: 'id', type: 'int' }, { name: 'id', type: 'int' }] }, 400],
    [{ name: '_platform_mine', columns: [{ name: 'id', type: 'int' }] }, 403],
  ])('When the description is %j, then %i and nothing is created', async (body, status) => {
    const p = await project();
    await admin('post', `/admin/projects/${p.id}/tables`, body).expect(status);
    expect((await admin('get', `/admin/projects/${p.id}/tables`).expect(200)).body.data.tables).toEqual([]);
  });

  it('When the project is unknown, then 404', async () => {
    await admin('post', '/admin/projects/prj_nope/tables', { name: 'x', columns: [{ name: 'id', type: 'int' }] }).expect(404);
  });
});

describe('adminRunTableDdl', () => {
  it('When one DDL statement is run, then it applies in the chosen schema as the project', async () => {
    const p = await project();
    await admin('post', `/admin/projects/${p.id}/tables/ddl`, { sql: 'CREATE TABLE notes (id serial PRIMARY KEY, body text);' }).expect(200);
    const res = await admin('post', `/admin/projects/${p.id}/tables/ddl`, { sql: 'ALTER TABLE notes ADD COLUMN pinned boolean DEFAULT false' }).expect(200);
    expect(res.body.data).toEqual({ schema: 'public', command: 'ALTER TABLE' });
    const schema = await request(t.app).get('/v1/tables/notes/schema').set('Authorization', `Bearer ${p.key}`).expect(200);
    expect(schema.body.data.columns.map((c: any) => c.name)).toEqual(['id', 'body', 'pinned']);
    const owner = await t.db.pool.query(`SELECT tableowner FROM pg_tables WHERE schemaname = $1 AND tablename = 'notes'`, [await physicalSchema(t.db.sql, p.id, 'public')]);
    expect(owner.rows[0].tableowner).toMatch(/^t[0-9a-f]{8}_/);
  });

  it('When a statement could leave the project or is not DDL, then 400/403 and nothing changes', async () => {
    const p = await project();
    const other = await project();
    await admin('post', `/admin/projects/${other.id}/tables/ddl`, { sql: 'CREATE TABLE theirs (id int)' }).expect(200);
    const refused: Array<[string, number]> = [
      ['SET ROLE postgres', 400],
      ['RESET ROLE', 400],
      ["DO $$ BEGIN EXECUTE 'DROP TABLE x'; END $$", 400],
      ['CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$', 400],
      ['GRANT ALL ON SCHEMA public TO PUBLIC', 400],
      ['SELECT * FROM pg_authid', 400],
      ['CREATE TABLE a (id int); RESET ROLE; DROP TABLE api_keys', 400],
      ['CREATE TABLE b (id int); DROP TABLE b', 400],
      ['CREATE TABLE public.evil (id int)', 400],
      [`CREATE TABLE ${await physicalSchema(t.db.sql, other.id, 'public')}.evil (id int)`, 400],
      [`DROP TABLE ${await physicalSchema(t.db.sql, other.id, 'public')}.theirs`, 400],
      ['DROP TABLE api_keys', 400],
      ['DROP TABLE _platform_meta', 403],
      ['CREATE TABLE oops (id int', 400],
    ];
    for (const [sql, status] of refused) {
      const res = await admin('post', `/admin/projects/${p.id}/tables/ddl`, { sql });
      expect({ sql, status: res.status }).toEqual({ sql, status });
      expect(res.body.success).toBe(false);
    }
    expect((await admin('get', `/admin/projects/${p.id}/tables`).expect(200)).body.data.tables).toEqual([]);
    expect((await admin('get', `/admin/projects/${other.id}/tables`).expect(200)).body.data.tables.map((x: any) => x.name)).toEqual(['theirs']);
    const service = await t.db.pool.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public' AND tablename IN ('evil', 'api_keys')");
    expect(service.rows[0].n).toBe(1);
  });
});

describe('adminCopyPreviewSchema', () => {
  it('When preview has new tables, columns and indexes, then copy-preview adds them to public, keeps public data, and a dry run changes nothing', async () => {
    const p = await project();
    const ddl = (schema: string, sql: string) => admin('post', `/admin/projects/${p.id}/tables/ddl`, { schema, sql }).expect(200);
    await ddl('preview', "CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL DEFAULT 'anon', email text UNIQUE)");
    await ddl('preview', 'CREATE INDEX customers_name_idx ON customers (name)');
    await ddl('preview', 'CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, customer_id integer REFERENCES customers (id), total numeric(10,2))');
    await ddl('preview', 'CREATE TABLE tags (id serial PRIMARY KEY, label text)');
    await ddl('preview', 'CREATE VIEW big_orders AS SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.total > 100');
    await ddl('public', 'CREATE TABLE customers (id serial PRIMARY KEY, nickname text)');
    await t.db.pool.query(`INSERT INTO ${await physicalSchema(t.db.sql, p.id, 'public')}.customers (nickname) VALUES ('kept')`);

    const dry = await admin('post', `/admin/projects/${p.id}/tables/copy-preview`, { dry_run: true }).expect(200);
    expect(dry.body.data).toMatchObject({ dry_run: true, created_tables: ['orders', 'tags'], added_columns: ['customers.name', 'customers.email'], added_indexes: ['customers_name_idx'], added_views: ['big_orders'] });
    expect(dry.body.data.differences).toEqual(['customers.nickname: only in public (kept)']);
    expect((await admin('get', `/admin/projects/${p.id}/tables`).expect(200)).body.data.tables.map((x: any) => x.name)).toEqual(['customers']);

    const cli = await ops(['tables', 'copy-preview', p.id]);
    expect({ code: cli.code, stderr: cli.stderr }).toEqual({ code: 0, stderr: '' });
    expect(cli.stdout).toContain('Statements run:');
    const tables = (await admin('get', `/admin/projects/${p.id}/tables`).expect(200)).body.data.tables;
    expect(tables.map((x: any) => x.name)).toEqual(['customers', 'orders', 'tags']);
    // A serial column gets public's own sequence: public and preview number independently.
    const tagDefault = tables[2].columns[0].default_value;
    expect(tagDefault).toMatch(/^nextval\('tags_id_seq'::regclass\)$/);
    await t.db.pool.query(`INSERT INTO ${await physicalSchema(t.db.sql, p.id, 'preview')}.tags (label) VALUES ('p1'), ('p2')`);
    const tag = await t.db.pool.query(`INSERT INTO ${await physicalSchema(t.db.sql, p.id, 'public')}.tags (label) VALUES ('first') RETURNING id`);
    expect(tag.rows[0].id).toBe(1);
    expect(tables[0].columns.map((c: any) => c.name)).toEqual(['id', 'nickname', 'name', 'email']);
    const pub = (await physicalSchema(t.db.sql, p.id, 'public'));
    await t.db.pool.query(`INSERT INTO ${pub}.orders (customer_id, total) VALUES (1, 9.5)`);
    await expect(t.db.pool.query(`INSERT INTO ${pub}.orders (customer_id, total) VALUES (999, 1)`)).rejects.toMatchObject({ code: '23503' });
    await t.db.pool.query(`UPDATE ${pub}.customers SET email = 'a@x'`);
    await expect(t.db.pool.query(`INSERT INTO ${pub}.customers (email) VALUES ('a@x')`)).rejects.toMatchObject({ code: '23505' });
    await t.db.pool.query(`UPDATE ${pub}.customers SET email = NULL`);
    const rows = await request(t.app).get('/v1/tables/customers/rows').set('Authorization', `Bearer ${p.key}`).expect(200);
    expect(rows.body.data.rows).toEqual([{ id: 1, nickname: 'kept', name: 'anon', email: null }]);
    await t.db.pool.query(`INSERT INTO ${pub}.orders (customer_id, total) VALUES (1, 250)`);
    const view = await t.db.pool.query(`SELECT count(*)::int AS n FROM ${pub}.big_orders`);
    expect(view.rows[0].n).toBe(1); // public's view reads public's tables, not preview's (empty)
    const again = await admin('post', `/admin/projects/${p.id}/tables/copy-preview`, {}).expect(200);
    expect(again.body.data.statements).toEqual([]);
  });
});

describe('ops tables', () => {
  it('When the CLI runs DDL and lists tables, then it reaches the project, and bad lines exit 2', async () => {
    const p = await project();
    const ran = await ops(['tables', 'ddl', p.id, '--schema', 'preview', '--sql', 'CREATE TABLE kv (k text PRIMARY KEY, v jsonb)']);
    expect(ran).toMatchObject({ code: 0, stdout: 'CREATE TABLE done in the preview schema.\n' });
    const list = await ops(['tables', 'list', p.id, '--schema', 'preview']);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(/^TABLE +COLUMN +TYPE +NULL +KEY +DEFAULT$/);
    expect(list.stdout).toMatch(/^kv +k +text +no +pk/m);
    const json = await ops(['tables', 'list', p.id, '--schema', 'preview', '--json']);
    expect(JSON.parse(json.stdout).tables[0].name).toBe('kv');
    expect((await ops(['tables', 'ddl', p.id])).code).toBe(2);
    expect((await ops(['tables', 'list', p.id, '--schema', 'staging'])).code).toBe(2);
    const file = path.join(os.tmpdir(), `table-${process.pid}-${Date.now()}.json`);
    await fs.writeFile(file, JSON.stringify({ name: 'weird', columns: [{ name: 'id', type: 'integer', primary_key: true }, { name: '__proto__', type: 'text' }] }));
    const created = await ops(['tables', 'create', p.id, '--file', file]);
    await fs.rm(file, { force: true });
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^Created table weird in the public schema\./);
    await t.db.pool.query(`INSERT INTO ${await physicalSchema(t.db.sql, p.id, 'public')}.weird VALUES (1, 'not a prototype')`);
    const weird = await request(t.app).get('/v1/tables/weird/rows').set('Authorization', `Bearer ${p.key}`).expect(200);
    expect(weird.text).toContain('"__proto__":"not a prototype"');
    expect((await ops(['tables', 'create', p.id])).code).toBe(2);
    const refused = await ops(['tables', 'ddl', p.id, '--sql', 'SET ROLE postgres']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('invalid_request');
  });
});

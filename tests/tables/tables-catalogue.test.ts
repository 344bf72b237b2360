/**
 * The catalogue stays closed (issue 44, items 8 and 9): casts to `oid` and to every `reg*` type are
 * refused wherever tenant SQL is accepted (operator DDL, the structured create's types and
 * defaults), in every spelling; a table from before with such a column is not served to the tables
 * API or the bot; and every name is judged on the parse tree, where `U&"\005f…"` escapes are
 * already decoded, so a platform name cannot be created or renamed to.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { TestApp } from '../support/app.js';
import { tablesHarness } from '../support/tables.js';
import { physicalSchema, withProjectTx } from '../../lib/tables/isolation.js';
import { runHelper, type BotDeps } from '../../lib/bot/helpers.js';

let t: TestApp;
const h = tablesHarness({}, (started) => (t = started.t));
const made = h.made;

const project = () => h.project();

const admin = (method: 'get' | 'post', url: string, body?: object) => {
  const req = request(t.app)[method](url).set('Authorization', `Bearer ${t.adminToken}`);
  return body ? req.send(body) : req;
};
const ddl = (projectId: string, sql: string) => admin('post', `/admin/projects/${projectId}/tables/ddl`, { sql });

/** Names of the project's objects in its public schema: relations, types and constraints. */
async function objectNames(projectId: string): Promise<string[]> {
  const schema = await physicalSchema(t.db.sql, projectId, 'public');
  const r = await t.db.pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
     UNION ALL SELECT y.typname FROM pg_type y JOIN pg_namespace n ON n.oid = y.typnamespace WHERE n.nspname = $1
     UNION ALL SELECT k.conname FROM pg_constraint k JOIN pg_namespace n ON n.oid = k.connamespace WHERE n.nspname = $1
     UNION ALL SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND a.attnum > 0`,
    [schema],
  );
  return r.rows.map((x) => x.name).sort();
}

const CATALOGUE_TYPES = ['oid', 'regclass', 'regrole', 'regnamespace', 'regproc', 'regprocedure', 'regoper', 'regoperator', 'regtype', 'regconfig', 'regdictionary', 'regcollation'];

describe('casts to the catalogue types', () => {
  it('When operator DDL casts to oid or any reg* type, in any spelling and position, then 400 invalid_request and nothing is created', async () => {
    const a = await project();
    expect((await ddl(a.id, 'CREATE TABLE nums (n int PRIMARY KEY, body text)')).status).toBe(200);
    const before = await objectNames(a.id);
    const probes: string[] = [];
    for (const type of CATALOGUE_TYPES) {
      probes.push(
        `CREATE TABLE rels AS SELECT n, n::${type}::text AS name FROM nums`,
        `CREATE TABLE rels AS SELECT CAST(n AS ${type}) AS x FROM nums`,
        `CREATE TABLE rels AS SELECT CAST(n AS pg_catalog.${type}) AS x FROM nums`,
        `CREATE TABLE rels AS SELECT ${type} '1' AS x`,
        `CREATE TABLE rels AS SELECT '{1}'::${type}[] AS x`,
        `CREATE TABLE rels AS SELECT '{1}'::_${type} AS x`,
        `CREATE TABLE rels AS SELECT n::"${type}" AS x FROM nums`,
        `CREATE TABLE rels (x ${type})`,
        `CREATE TABLE rels (x ${type}[])`,
        `CREATE TABLE rels (x text DEFAULT '1'::${type}::text)`,
        `CREATE TABLE rels (x int CHECK (x::${type} IS NOT NULL))`,
        `ALTER TABLE nums ADD COLUMN x ${type}`,
        `ALTER TABLE nums ALTER COLUMN n TYPE ${type}`,
        `ALTER TABLE nums ALTER COLUMN body TYPE text USING n::${type}::text`,
        `CREATE INDEX rels_i ON nums ((n::${type}))`,
        `CREATE VIEW rels AS SELECT n::${type} AS x FROM nums`,
        `CREATE TYPE rels AS (x ${type})`,
        `CREATE TABLE rels AS SELECT ${type}('1') AS x`,
      );
      if (type !== 'oid') probes.push(`CREATE TABLE rels AS SELECT to_${type}('pg_class') AS x`);
    }
    probes.push(
      "CREATE TABLE rels AS SELECT 'p_other_public.t'::regclass AS x",
      'CREATE SEQUENCE rels AS regclass',
      // Functions that look a name up take only a plain constant of this project's.
      "CREATE TABLE rels (x bigint DEFAULT nextval('p_other_public.seq'))",
      "CREATE TABLE rels (x bigint DEFAULT nextval('seq'::regclass))",
      'CREATE TABLE rels AS SELECT nextval(body) AS x FROM nums',
      "CREATE INDEX rels_i ON nums (to_tsvector('p_other_public.cfg', body))",
      // Other schemas' operators, collations and types by qualified name.
      'CREATE TABLE rels AS SELECT n OPERATOR(p_other_public.+) n AS x FROM nums',
      'CREATE TABLE rels AS SELECT body COLLATE p_other_public.c AS x FROM nums',
      'CREATE TABLE rels OF p_other_public.comp',
    );
    const accepted: string[] = [];
    for (const sql of probes) {
      const res = await ddl(a.id, sql);
      if (res.status !== 400 || res.body.error?.code !== 'invalid_request' || res.body.success !== false) accepted.push(`${sql} → ${res.status} ${JSON.stringify(res.body.error)}`);
    }
    expect(accepted).toEqual([]);
    expect(await objectNames(a.id)).toEqual(before);
    // What the rules still let through: a sequence by its own plain name, a text search configuration.
    for (const sql of ['CREATE SEQUENCE counter', "CREATE TABLE ok (id bigint DEFAULT nextval('counter'), body text)", "CREATE INDEX ok_fts ON ok (to_tsvector('english', body))"]) {
      expect({ sql, status: (await ddl(a.id, sql)).status }).toEqual({ sql, status: 200 });
    }
  });

  it('When the structured create names a catalogue type or casts to one in a default, then 400 and nothing is created', async () => {
    const a = await project();
    for (const columns of [
      [{ name: 'x', type: 'regclass' }],
      [{ name: 'x', type: 'regrole[]' }],
      [{ name: 'x', type: 'oid' }],
      [{ name: 'x', type: 'text', default: "'1259'::regclass::text" }],
      [{ name: 'x', type: 'bigint', default: "nextval('seq'::regclass)" }],
    ]) {
      const res = await admin('post', `/admin/projects/${a.id}/tables`, { name: 'rels', columns });
      expect({ columns, status: res.status, code: res.body.error?.code }).toEqual({ columns, status: 400, code: 'invalid_request' });
    }
    expect((await admin('get', `/admin/projects/${a.id}/tables`).expect(200)).body.data.tables).toEqual([]);
  });

  it('When a table from before has a catalogue-typed column, then the tables API and the bot refuse it (no names leak), the operator sees it and can drop the column', async () => {
    const a = await project();
    // What an older, unjudged DDL could have left (run as the project, past the parser).
    await withProjectTx(t.db, a.id, { readOnly: false, statementTimeoutMs: 5000, schema: 'public', ddl: true }, async (c) => {
      await c.query('CREATE TABLE legacy (id int PRIMARY KEY, r regclass)');
      await c.query("INSERT INTO legacy VALUES (1, 'pg_class'::regclass)");
      await c.query('CREATE DOMAIN roles AS regrole[]');
      await c.query('CREATE TABLE legacy2 (id int PRIMARY KEY, rs roles)');
    });
    const asA = (req: request.Test) => req.set('Authorization', `Bearer ${a.key}`);
    const answers = [
      await asA(request(t.app).get('/v1/tables/legacy/rows')),
      await asA(request(t.app).get('/v1/tables/legacy/rows').query({ columns: 'id' })),
      await asA(request(t.app).get('/v1/tables/legacy/rows').query({ filters: JSON.stringify([{ column: 'r', op: 'eq', value: 'p_other_public.t' }]) })),
      await asA(request(t.app).get('/v1/tables/legacy/schema')),
      await asA(request(t.app).patch('/v1/tables/legacy/rows')).send({ filters: [{ column: 'id', op: 'eq', value: 1 }], set: { r: 'pg_authid' } }),
      await asA(request(t.app).delete('/v1/tables/legacy/rows').query({ filters: JSON.stringify([{ column: 'r', op: 'eq', value: 'pg_class' }]) })),
      await asA(request(t.app).get('/v1/tables/legacy2/rows')),
    ];
    for (const res of answers) {
      expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: 'invalid_request' });
      expect(JSON.stringify(res.body)).not.toMatch(/pg_class|pg_authid/);
    }
    const deps = t.services.deps as unknown as BotDeps;
    const inv = { projectId: a.id, mode: 'production' as const, logLines: 0 };
    for (const [op, args] of [
      ['tables.select', { table: 'legacy' }],
      ['tables.select', { table: 'legacy', columns: ['id'] }],
      ['tables.insert', { table: 'legacy', row: { id: 2, r: 'pg_authid' } }],
      ['tables.update', { table: 'legacy', filters: [{ column: 'id', op: 'eq', value: 1 }], set: { r: 'pg_authid' } }],
      ['tables.delete', { table: 'legacy', filters: [{ column: 'r', op: 'eq', value: 'pg_class' }] }],
    ] as const) {
      const answer = JSON.parse(await runHelper(deps, inv, op, JSON.stringify(args)));
      expect({ op, answer }).toEqual({ op, answer: { ok: false, error: expect.objectContaining({ code: 'invalid_request' }) } });
      expect(JSON.stringify(answer)).not.toMatch(/pg_class|pg_authid/);
    }
    // Nothing was written through any of them.
    const left = await t.db.pool.query(`SELECT id, r::oid::bigint AS r FROM ${await physicalSchema(t.db.sql, a.id, 'public')}.legacy`);
    expect(left.rows).toEqual([{ id: 1, r: '1259' }]);
    // The operator still sees the table, and fixes it.
    const listed = await admin('get', `/admin/projects/${a.id}/tables`).expect(200);
    expect(listed.body.data.tables.map((x: { name: string }) => x.name)).toEqual(['legacy', 'legacy2']);
    expect((await ddl(a.id, 'ALTER TABLE legacy DROP COLUMN r')).status).toBe(200);
    expect((await asA(request(t.app).get('/v1/tables/legacy/rows')).expect(200)).body.data.rows).toEqual([{ id: 1 }]);
  });
});

describe('names judged on the parse tree', () => {
  it('When a platform name is spelled with U& escapes (rename targets, columns, indexes, constraints, types), then 403 platform_table_forbidden and nothing is named so', async () => {
    const a = await project();
    expect((await ddl(a.id, 'CREATE TABLE notes (id int PRIMARY KEY, body text)')).status).toBe(200);
    expect((await ddl(a.id, 'CREATE INDEX notes_body ON notes (body)')).status).toBe(200);
    expect((await ddl(a.id, "CREATE TYPE mood AS ENUM ('ok')")).status).toBe(200);
    expect((await ddl(a.id, 'ALTER TABLE notes ADD CONSTRAINT notes_id_positive CHECK (id > 0)')).status).toBe(200);
    const before = await objectNames(a.id);
    const u = (rest: string) => `U&"\\005f${rest}"`;
    const probes = [
      `ALTER TABLE notes RENAME TO ${u('platform_meta2')}`,
      `ALTER TABLE notes RENAME COLUMN body TO ${u('platform_col')}`,
      `ALTER TABLE notes RENAME CONSTRAINT notes_id_positive TO ${u('platform_k')}`,
      `ALTER INDEX notes_body RENAME TO ${u('platform_idx')}`,
      `ALTER TYPE mood RENAME TO ${u('platform_mood')}`,
      `CREATE INDEX ${u('platform_idx')} ON notes (id)`,
      `CREATE TYPE ${u('platform_t')} AS ENUM ('a')`,
      `CREATE TYPE ${u('platform_c')} AS (a int)`,
      `CREATE TABLE ${u('platform_meta')} (id int)`,
      `CREATE TABLE t2 (${u('platform_col')} int)`,
      `ALTER TABLE notes ADD COLUMN ${u('platform_col')} int`,
      `ALTER TABLE notes ADD CONSTRAINT ${u('platform_k')} CHECK (id > 0)`,
      `CREATE SEQUENCE ${u('platform_seq')}`,
      `CREATE VIEW ${u('platform_v')} AS SELECT id FROM notes`,
      `CREATE VIEW v AS SELECT id AS ${u('platform_col')} FROM notes`,
      `DROP TABLE ${u('platform_meta')}`,
      `ALTER TABLE notes RENAME TO U&"!005fplatform_meta3" UESCAPE '!'`,
      `ALTER TABLE notes RENAME TO U&"\\005FPLATFORM_x"`,
    ];
    const accepted: string[] = [];
    for (const sql of probes) {
      const res = await ddl(a.id, sql);
      if (res.status !== 403 || res.body.error?.code !== 'platform_table_forbidden') accepted.push(`${sql} → ${res.status} ${JSON.stringify(res.body.error)}`);
    }
    expect(accepted).toEqual([]);
    expect(await objectNames(a.id)).toEqual(before);
  });

  it('When a rename target or a new index, constraint or type name starts with pg_, then 400, as a new table name is', async () => {
    const a = await project();
    expect((await ddl(a.id, 'CREATE TABLE notes (id int PRIMARY KEY, body text)')).status).toBe(200);
    expect((await ddl(a.id, "CREATE TYPE mood AS ENUM ('ok')")).status).toBe(200);
    for (const sql of [
      'ALTER TABLE notes RENAME TO pg_notes',
      'ALTER TABLE notes RENAME TO U&"pg\\005fnotes"',
      'ALTER TYPE mood RENAME TO pg_mood',
      'CREATE INDEX pg_i ON notes (body)',
      'ALTER TABLE notes ADD CONSTRAINT pg_k CHECK (id > 0)',
      "CREATE TYPE pg_t AS ENUM ('a')",
      'CREATE TABLE pg_notes (id int)',
    ]) {
      const res = await ddl(a.id, sql);
      expect({ sql, status: res.status, code: res.body.error?.code }).toEqual({ sql, status: 400, code: 'invalid_request' });
    }
    // Ordinary renames still work (a column may be called anything but a platform name).
    for (const sql of ['ALTER TABLE notes RENAME TO memos', 'ALTER TABLE memos RENAME COLUMN body TO pg_text', 'ALTER TYPE mood RENAME TO feeling']) {
      expect({ sql, status: (await ddl(a.id, sql)).status }).toEqual({ sql, status: 200 });
    }
  });
});

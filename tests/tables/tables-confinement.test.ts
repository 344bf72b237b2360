/**
 * Confinement of project tables (issue 31): operator DDL is judged on PostgreSQL's parse tree, and
 * every tenant statement runs on a login of the project's own role, so neither the DDL, nor a
 * default expression it left behind, nor any SQL the tables API or the bot's helper builds can
 * become another role, read another project's rows or the platform's tables, or leave session
 * state on a pooled connection.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { TestApp } from '../support/app.js';
import { tablesHarness } from '../support/tables.js';
import { ensureProjectStorage, physicalSchema, storageNames, withProjectTx } from '../../lib/tables/isolation.js';
import { insertRow } from '../../lib/bot/table-insert.js';

let t: TestApp;
const h = tablesHarness({}, (started) => (t = started.t));
const made = h.made;

const project = () => h.project();

const ddl = (projectId: string, sql: string, schema = 'public') =>
  request(t.app).post(`/admin/projects/${projectId}/tables/ddl`).set('Authorization', `Bearer ${t.adminToken}`).send({ schema, sql });

/** Raw SQL on a tenant connection of the project (what the parser would never let through). */
const raw = <T = any>(projectId: string, sql: string) =>
  withProjectTx(t.db, projectId, { readOnly: false, statementTimeoutMs: 5000, schema: 'public', ddl: true }, async (c) => (await c.query(sql)).rows as T[]);

/** Two projects: B holds a secret row; A tries to reach it. */
async function pair() {
  const a = await project();
  const b = await project();
  expect((await ddl(b.id, 'CREATE TABLE t (id int PRIMARY KEY, secret text)')).status).toBe(200);
  await t.db.pool.query(`INSERT INTO ${await physicalSchema(t.db.sql, b.id, 'public')}.t VALUES (1, 'b-secret')`);
  const bRole = (await storageNames(t.db.sql, b.id)).role;
  return { a, b, bRole, bSchema: await physicalSchema(t.db.sql, b.id, 'public') };
}

describe('operator DDL', () => {
  it('When a statement of the isolation probe is sent, then it is refused and nothing is created', async () => {
    const { a, bRole, bSchema } = await pair();
    const probes = [
      `CREATE TABLE x AS SELECT set_config('role', '${bRole}', true) r, query_to_xml('select * from ${bSchema}.t', true, false, '')::text x`,
      `CREATE TABLE x AS SELECT query_to_xml('select * from ${bSchema}.t', true, false, '')::text x`,
      "CREATE TABLE x AS SELECT set_config('role', 'none', true) r, (SELECT count(*) FROM public.api_keys) n",
      "CREATE TABLE x AS SELECT key_hash FROM public.api_keys",
      'CREATE TABLE x AS SELECT pg_terminate_backend(pid) FROM pg_stat_activity',
      "CREATE TABLE x AS SELECT set_config('search_path', 'public', false) s",
      'CREATE TABLE pg_temp.x (id int)',
      'CREATE TEMP TABLE x (id int)',
      `CREATE TABLE x AS SELECT * FROM ${bSchema}.t`,
      `CREATE VIEW x AS SELECT * FROM ${bSchema}.t`,
      'CREATE VIEW x AS SELECT * FROM (SELECT 1) s',
      'CREATE VIEW x AS SELECT relname FROM pg_class',
      "CREATE TABLE x (id int DEFAULT current_setting('role')::int)",
      "CREATE TABLE x (id text DEFAULT set_config('role', 'none', true))",
      `ALTER TABLE x OWNER TO "${bRole}"`,
      'CREATE TABLE x (id int); SET search_path = public',
      'SET search_path = public',
      "SELECT set_config('role', 'none', false)",
      'WITH s AS (SELECT 1) SELECT * FROM s',
      'CREATE TABLE x (id int) TABLESPACE pg_default',
    ];
    for (const sql of probes) {
      const res = await ddl(a.id, sql);
      expect({ sql, status: res.status, code: res.body.error?.code }).toEqual({ sql, status: 400, code: 'invalid_request' });
    }
    await ensureProjectStorage(t.db, a.id);
    const tables = await t.db.pool.query("SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname NOT LIKE '\\_platform\\_%'", [await physicalSchema(t.db.sql, a.id, 'public')]);
    expect(tables.rows[0].n).toBe(0);
  });

  it('When an accepted statement seeds a table (AS VALUES, AS SELECT from its own table), then it works, and B\'s table is not reachable by any accepted form', async () => {
    const { a } = await pair();
    expect((await ddl(a.id, "CREATE TABLE seed (id, name) AS VALUES (1, 'one'), (2, 'two')")).status).toBe(200);
    expect((await ddl(a.id, 'CREATE TABLE copy AS SELECT id, upper(name) AS name FROM seed WHERE id > 1')).status).toBe(200);
    expect((await ddl(a.id, "CREATE TABLE stamped (id uuid DEFAULT gen_random_uuid() PRIMARY KEY, at timestamptz DEFAULT now(), n int CHECK (n > 0))")).status).toBe(200);
    const rows = await request(t.app).get('/v1/tables/copy/rows').set('Authorization', `Bearer ${a.key}`).expect(200);
    expect(rows.body.data.rows).toEqual([{ id: 2, name: 'TWO' }]);
    // B's table by its plain name resolves inside A's schema: not found.
    for (const sql of ['CREATE TABLE y AS SELECT * FROM t', 'CREATE VIEW y AS SELECT * FROM t']) {
      const res = await ddl(a.id, sql);
      expect({ sql, status: res.status }).toEqual({ sql, status: 400 });
    }
  });

  it('When an expression names the session (current_user, current_schema…) or a system column (tableoid…), wherever an expression can stand, then 400 invalid_request and nothing is created', async () => {
    const a = await project();
    expect((await ddl(a.id, 'CREATE TABLE base (id int PRIMARY KEY, body text)')).status).toBe(200);
    const session = ['current_user', 'session_user', 'current_role', 'user', 'current_schema', 'current_catalog', 'current_schema()', 'system_user', "current_setting('role')", 'pg_backend_pid()::text', 'inet_server_addr()::text', 'version()', 'current_database()'];
    const probes: string[] = [];
    for (const e of session) {
      probes.push(
        `CREATE TABLE x (v text DEFAULT ${e})`,
        `CREATE TABLE x (v text CHECK (v <> ${e}))`,
        `CREATE TABLE x (v text GENERATED ALWAYS AS (${e}) STORED)`,
        `CREATE TABLE x (v text, CONSTRAINT c CHECK (v IS DISTINCT FROM ${e}))`,
        `CREATE TABLE x AS SELECT ${e} AS v`,
        `CREATE TABLE x AS SELECT id, ${e} AS v FROM base`,
        `CREATE VIEW x AS SELECT ${e} AS v`,
        `CREATE VIEW x AS SELECT id FROM base WHERE body = ${e}`,
        `CREATE INDEX x ON base ((body || ${e}))`,
        `CREATE INDEX x ON base (id) WHERE body = ${e}`,
        `ALTER TABLE base ADD COLUMN v text DEFAULT ${e}`,
        `ALTER TABLE base ALTER COLUMN body SET DEFAULT ${e}`,
        `ALTER TABLE base ALTER COLUMN body TYPE text USING ${e}`,
        `ALTER TABLE base ADD CONSTRAINT c CHECK (body <> ${e})`,
      );
    }
    for (const column of ['tableoid', 'base.tableoid', '"tableoid"', 'xmin', 'xmax', 'cmin', 'cmax', 'ctid']) {
      probes.push(
        `CREATE TABLE x AS SELECT ${column}::text AS v FROM base`,
        `CREATE VIEW x AS SELECT id, ${column} AS v FROM base`,
        `CREATE TABLE x (v text, CHECK (tableoid IS NOT NULL))`,
        `CREATE TABLE x (v bigint GENERATED ALWAYS AS (${column.replace('base.', '')}::text::bigint) STORED)`,
        `CREATE INDEX x ON base (id) WHERE ${column} IS NOT NULL`,
      );
    }
    const accepted: string[] = [];
    for (const sql of new Set(probes)) {
      const res = await ddl(a.id, sql);
      if (res.status !== 400 || res.body.error?.code !== 'invalid_request' || !/not accepted/.test(res.body.error?.message ?? '')) accepted.push(`${sql} → ${res.status} ${JSON.stringify(res.body.error)}`);
    }
    // A partition bound is evaluated once and stored: the session's name would be kept in it.
    expect((await ddl(a.id, 'CREATE TABLE parts (v text) PARTITION BY LIST (v)')).status).toBe(200);
    for (const sql of ['CREATE TABLE x PARTITION OF parts FOR VALUES IN (current_user)', 'CREATE TABLE x PARTITION OF parts FOR VALUES IN (current_catalog)']) {
      const res = await ddl(a.id, sql);
      if (res.status !== 400) accepted.push(`${sql} → ${res.status}`);
    }
    // The structured create's defaults go through the same judge.
    for (const d of ['current_user', 'current_schema', 'session_user']) {
      const res = await request(t.app).post(`/admin/projects/${a.id}/tables`).set('Authorization', `Bearer ${t.adminToken}`).send({ name: 'x', columns: [{ name: 'v', type: 'text', default: d }] });
      if (res.status !== 400 || res.body.error?.code !== 'invalid_request') accepted.push(`structured default ${d} → ${res.status}`);
    }
    expect(accepted).toEqual([]);
    const schema = await physicalSchema(t.db.sql, a.id, 'public');
    const rels = await t.db.pool.query("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname NOT LIKE '\\_platform\\_%' ORDER BY 1", [schema]);
    expect(rels.rows.map((r) => r.relname)).toEqual(['base', 'base_pkey', 'parts']);
    const cols = await t.db.pool.query("SELECT a.attname, pg_get_expr(d.adbin, d.adrelid) AS def FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE n.nspname = $1 AND c.relname = 'base' AND a.attnum > 0 ORDER BY a.attnum", [schema]);
    expect(cols.rows).toEqual([{ attname: 'id', def: null }, { attname: 'body', def: null }]);
    // Date and time values without parentheses are still accepted.
    for (const sql of ['CREATE TABLE stamps (d date DEFAULT current_date, t timestamptz DEFAULT current_timestamp, l timestamp DEFAULT localtimestamp, k time DEFAULT localtime)']) {
      expect({ sql, status: (await ddl(a.id, sql)).status }).toEqual({ sql, status: 200 });
    }
  });

  it('When each documented kind of statement is sent, then it is accepted and runs', async () => {
    const p = await project();
    const accepted = [
      "CREATE TYPE mood AS ENUM ('ok', 'meh')",
      "ALTER TYPE mood ADD VALUE 'great'",
      'CREATE TYPE pair AS (a int, b text)',
      'CREATE SEQUENCE counter START 10',
      'ALTER SEQUENCE counter INCREMENT BY 2',
      "CREATE UNLOGGED TABLE items (id bigserial PRIMARY KEY, name text NOT NULL CHECK (length(name) > 0), m mood DEFAULT 'ok', n int DEFAULT nextval('counter'), at timestamptz DEFAULT now(), tags text[] DEFAULT '{}')",
      'CREATE UNIQUE INDEX items_name ON items (lower(name))',
      'CREATE INDEX items_tags ON items USING gin (tags)',
      "COMMENT ON TABLE items IS 'things'",
      "COMMENT ON COLUMN items.name IS 'the name'",
      'ALTER TABLE items ADD COLUMN price numeric(10,2) DEFAULT 0',
      'ALTER TABLE items RENAME COLUMN price TO cost',
      'CREATE VIEW cheap AS SELECT id, name FROM items WHERE cost < 10',
      'CREATE TABLE totals AS SELECT m, count(*) AS n FROM items GROUP BY m',
      'TRUNCATE items',
      'ALTER INDEX items_name RENAME TO items_lower_name',
      'DROP VIEW cheap',
      'DROP TABLE totals',
      'DROP INDEX items_tags',
      'DROP SEQUENCE counter CASCADE',
      'DROP TYPE pair',
    ];
    for (const sql of accepted) {
      const res = await ddl(p.id, sql);
      expect({ sql, status: res.status, error: res.body.error }).toEqual({ sql, status: 200, error: undefined });
    }
  });
});

describe('tenant connections', () => {
  it('When raw SQL runs on a tenant connection, then it cannot become another role, read B or the platform, or end the service\'s sessions', async () => {
    const { a, bRole, bSchema } = await pair();
    const service = await t.db.pool.connect();
    const servicePid = (await service.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    service.release();
    const denied = [
      `SELECT set_config('role', '${bRole}', true)`,
      `SET ROLE "${bRole}"`,
      `SELECT * FROM ${bSchema}.t`,
      `SELECT query_to_xml('select * from ${bSchema}.t', true, false, '')`,
      'SELECT * FROM public.api_keys',
      `SELECT pg_terminate_backend(${servicePid})`,
    ];
    for (const sql of denied) {
      const got = await raw(a.id, sql).then((rows) => ({ rows }), (e) => ({ code: e.code }));
      expect({ sql, got }).toEqual({ sql, got: { code: expect.stringMatching(/^(42501|22023|3F000)$/) } });
    }
    // Resetting the role lands on the project's own role, never the service's.
    const [me] = await raw(a.id, "SELECT set_config('role', 'none', true) AS r, current_user AS u, session_user AS s");
    const aRole = (await storageNames(t.db.sql, a.id)).role;
    expect(me).toEqual({ r: 'none', u: aRole, s: aRole });
    await expect(raw(a.id, "SELECT set_config('role', 'none', true), (SELECT count(*) FROM public.api_keys)")).rejects.toMatchObject({ code: '42501' });
    // The role logs in, is a member of no role, and the server holds only a SCRAM verifier of its password.
    const role = await t.db.pool.query(
      `SELECT r.rolcanlogin, r.rolsuper, (SELECT count(*)::int FROM pg_auth_members m WHERE m.member = r.oid) AS memberships,
              left(a.rolpassword, 14) AS password FROM pg_roles r JOIN pg_authid a ON a.oid = r.oid WHERE r.rolname = $1`, [aRole]);
    expect(role.rows[0]).toEqual({ rolcanlogin: true, rolsuper: false, memberships: 0, password: 'SCRAM-SHA-256$' });
    // The service's own connections are untouched.
    expect((await t.db.pool.query('SELECT 1 AS ok')).rows[0].ok).toBe(1);
  });

  it('When a default expression left in a table reaches for B (written before the parser), then the bot\'s insert and the API cannot read B', async () => {
    const { a, bSchema } = await pair();
    expect((await ddl(a.id, 'CREATE TABLE loot (id int PRIMARY KEY, x text)')).status).toBe(200);
    // As the service (superuser): what an old, unparsed DDL could have written.
    await t.db.pool.query(`ALTER TABLE ${await physicalSchema(t.db.sql, a.id, 'public')}.loot ALTER COLUMN x SET DEFAULT (set_config('role', 'none', true) || query_to_xml('select * from ${bSchema}.t', true, false, '')::text)`);
    await expect(insertRow(t.db, 5000, a.id, 'public', 'loot', { id: 1 })).rejects.toBeTruthy();
    const left = await t.db.pool.query(`SELECT count(*)::int AS n FROM ${await physicalSchema(t.db.sql, a.id, 'public')}.loot`);
    expect(left.rows[0].n).toBe(0);
  });

  it('When a tenant session changes its settings or makes a temp table, then the next transaction on that connection starts clean', async () => {
    const { a } = await project().then((p) => ({ a: p }));
    await ensureProjectStorage(t.db, a.id);
    const [first] = await raw(a.id, "SELECT pg_backend_pid() AS pid, set_config('search_path', 'public', false) AS s, set_config('app.left', 'behind', false) AS l");
    await raw(a.id, 'CREATE TEMP TABLE lingering (id int)');
    let sameConnection = 0;
    for (let i = 0; i < 4; i++) {
      const [next] = await raw(a.id, "SELECT pg_backend_pid() AS pid, current_setting('app.left', true) AS l, to_regclass('pg_temp.lingering') AS tmp, current_setting('search_path') AS path");
      if (next.pid === first.pid) sameConnection++;
      expect(next.l === null || next.l === '').toBe(true);
      expect(next.tmp).toBeNull();
      expect(next.path).toContain(await physicalSchema(t.db.sql, a.id, 'public'));
    }
    expect(sameConnection).toBeGreaterThan(0);
  });
});

/**
 * Project tables under the production deployment's database role: a non-superuser that owns the
 * service database and has CREATEROLE. Provisioning, reads, writes and the isolation hold on the
 * system PostgreSQL (15) and on the embedded one (18, where CREATEROLE gives the creator ADMIN
 * but not SET on the roles it creates).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { testDatabaseUrl, withClient, withDatabase } from '../support/db.js';
import { dropProjectStorage, ensureProjectStorage, physicalSchema, withProjectTx } from '../../lib/tables/isolation.js';
import { readRows } from '../../lib/tables/rows.js';
import { pgTx } from '../../lib/platform/db/tx.js';
import { deleteRows, updateRows } from '../../lib/tables/writes.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../lib/platform/db/embedded.js';

const settings = { statementTimeoutMs: 5000, cursorSecret: randomBytes(32) };

/** A non-superuser CREATEROLE role owning a fresh database on the server of `adminUrl`; returns its URL and a cleanup. */
async function serviceRole(adminUrl: string) {
  const suffix = randomBytes(4).toString('hex');
  const role = `svc_tables_${suffix}`;
  const db = `svc_test_tables_roles_${suffix}`;
  await withClient(adminUrl, async (c) => {
    await c.query(`CREATE ROLE ${role} LOGIN CREATEROLE NOSUPERUSER PASSWORD 'pw_${suffix}'`);
    await c.query(`CREATE DATABASE ${db} OWNER ${role}`);
  });
  const u = new URL(withDatabase(adminUrl, db));
  u.username = role;
  u.password = `pw_${suffix}`;
  return {
    url: u.toString(),
    async drop() {
      await withClient(adminUrl, async (c) => {
        await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
        // Project roles left behind by a failed run (their names carry this database's digest).
        await c.query(`DROP ROLE IF EXISTS ${role}`);
      });
    },
  };
}

async function scenario(url: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', () => undefined);
  const db = { pool, sql: pgTx(pool) };
  const a = `prj_a${randomBytes(4).toString('hex')}`;
  const b = `prj_b${randomBytes(4).toString('hex')}`;
  let aKey = a;
  try {
    const me = await pool.query('SELECT rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user');
    expect(me.rows[0]).toEqual({ rolsuper: false, rolcreaterole: true });
    await pool.query('CREATE TABLE service_secret (id int)');
    await pool.query('INSERT INTO service_secret VALUES (1)');
    // What tables need of the service's schema: a project's storage key (migration storage_key).
    await pool.query("CREATE TABLE projects (id text PRIMARY KEY, storage_key text NOT NULL UNIQUE DEFAULT 'k' || substr(md5(random()::text), 1, 24))");
    await pool.query('INSERT INTO projects (id) VALUES ($1), ($2)', [a, b]);
    aKey = (await pool.query('SELECT storage_key FROM projects WHERE id = $1', [a])).rows[0].storage_key as string;
    await ensureProjectStorage(db, a);
    await ensureProjectStorage(db, b);
    const ddl = (id: string, ...sql: string[]) =>
      withProjectTx(db, id, { readOnly: false, statementTimeoutMs: 5000, schema: 'public', ddl: true }, async (c) => {
        for (const s of sql) await c.query(s);
      });
    await ddl(a, 'CREATE TABLE items (id int PRIMARY KEY, v text)', "INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 5) g");
    await ddl(b, 'CREATE TABLE theirs (id int PRIMARY KEY)');

    const page = await readRows(db, settings, { projectId: a, table: 'items', schema: 'public', limit: 2 });
    expect(page.rows).toEqual([{ id: 1, v: 'v1' }, { id: 2, v: 'v2' }]);
    const next = await readRows(db, settings, { projectId: a, table: 'items', schema: 'public', limit: 50, cursor: page.pagination.nextCursor! });
    expect(next.rows.map((r) => r.id)).toEqual([3, 4, 5]);
    const up = await updateRows(db, settings, { projectId: a, table: 'items', schema: 'public', filters: [{ column: 'id', op: 'eq', value: 1 }], set: { v: 'x' }, dryRun: false });
    expect(up.affected).toBe(1);
    const del = await deleteRows(db, settings, { projectId: a, table: 'items', schema: 'public', filters: [{ column: 'id', op: 'gt', value: 3 }], dryRun: false });
    expect(del.affected).toBe(2);

    for (const sql of [`SELECT * FROM ${await physicalSchema(db.sql, b, 'public')}.theirs`, 'SELECT * FROM public.service_secret', 'SELECT * FROM _platform_meta']) {
      await expect(ddl(a, sql)).rejects.toMatchObject({ code: expect.stringMatching(/^(42501|42P01)$/) });
    }
    // Provisioning is idempotent (a second process, the same project).
    const second = new pg.Pool({ connectionString: url, max: 1 });
    try {
      await ensureProjectStorage({ pool: second, sql: pgTx(second) }, a);
    } finally {
      await second.end();
    }
  } finally {
    await dropProjectStorage(db, a).catch(() => undefined);
    await dropProjectStorage(db, b).catch(() => undefined);
    const left = await pool.query("SELECT count(*)::int AS n FROM pg_roles WHERE rolname LIKE $1", [`%${aKey}`]);
    await pool.end();
    expect(left.rows[0].n).toBe(0);
  }
}

describe('project tables as a non-superuser with CREATEROLE', () => {
  it('When the service role is not a superuser (system PostgreSQL), then provisioning, reads, writes and isolation work', async () => {
    const svc = await serviceRole(testDatabaseUrl());
    try {
      await scenario(svc.url);
    } finally {
      await svc.drop();
    }
  });

  describe('embedded PostgreSQL 18', () => {
    let workDir: string;
    let server: EmbeddedPostgres | undefined;
    beforeAll(async () => {
      workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-tables-roles-'));
      await fs.chmod(workDir, 0o755);
      const port = await new Promise<number>((resolve) => {
        const s = net.createServer().listen(0, '127.0.0.1', () => {
          const p = (s.address() as net.AddressInfo).port;
          s.close(() => resolve(p));
        });
      });
      server = await startEmbeddedPostgres({ dataDir: workDir, port, unref: true });
    }, 60000);
    afterAll(async () => {
      await server?.stop();
      await fs.rm(workDir, { recursive: true, force: true });
    }, 30000);

    it('When the service role is not a superuser (PostgreSQL 16+ role grants), then provisioning, reads, writes and isolation work', async () => {
      const version = await withClient(server!.url, (c) => c.query("SELECT current_setting('server_version_num')::int AS v"));
      expect(version.rows[0].v).toBeGreaterThanOrEqual(160000);
      const svc = await serviceRole(server!.adminUrl);
      try {
        await scenario(svc.url);
      } finally {
        await svc.drop();
      }
    }, 60000);
  });
});

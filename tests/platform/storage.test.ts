/**
 * The storage layer: migration runner (idempotence, Prisma bookkeeping, checksums, advisory lock),
 * openDatabase, and the embedded PostgreSQL's clear errors (busy port); a data folder postgres cannot enter is tested in
 * tests/proofs/embedded-postgres.test.ts (it works).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../../lib/platform/db/database.js';
import { startEmbeddedPostgres } from '../../lib/platform/db/embedded.js';
import { applyMigrations, MIGRATIONS_DIR, readMigrations } from '../../lib/platform/db/migrate.js';
import { createScratchDatabase, testDatabaseUrl, withClient } from '../support/db.js';
import { timingBound } from '../support/retry-timing.js';

const isRoot = process.getuid?.() === 0;

async function tempMigrations(files: Record<string, string>): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-migrations-'));
  for (const [name, sql] of Object.entries(files)) {
    await fs.mkdir(path.join(dir, name));
    await fs.writeFile(path.join(dir, name, 'migration.sql'), sql);
  }
  return dir;
}

interface Row {
  id: string;
  checksum: string;
  migration_name: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
  applied_steps_count: number;
}
const rowsOf = (url: string) =>
  withClient(url, async (c) => (await c.query<Row>('SELECT * FROM _prisma_migrations ORDER BY migration_name')).rows);

describe('applyMigrations', () => {
  timingBound('a second migration run within 1 s').it('has applied every migration in the test database, and a second run applies nothing (fast)', async () => {
    const local = await readMigrations();
    expect(local.length).toBeGreaterThan(0);
    const t0 = Date.now();
    const { applied } = await applyMigrations(testDatabaseUrl());
    const ms = Date.now() - t0;
    expect(applied).toEqual([]);
    expect(ms).toBeLessThan(1000);
  });

  it("records Prisma's bookkeeping: one finished row per migration with the sha256 of the file", async () => {
    const local = await readMigrations(MIGRATIONS_DIR);
    const rows = await rowsOf(testDatabaseUrl());
    expect(rows.map((r) => r.migration_name)).toEqual(local.map((m) => m.name));
    for (const m of local) {
      const row = rows.find((r) => r.migration_name === m.name)!;
      const file = await fs.readFile(path.join(MIGRATIONS_DIR, m.name, 'migration.sql'));
      expect(row.checksum).toBe(createHash('sha256').update(file).digest('hex'));
      expect(row.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.rolled_back_at).toBeNull();
      expect(row.logs).toBeNull();
      expect(row.applied_steps_count).toBe(1);
    }
    const columns = await withClient(testDatabaseUrl(), async (c) =>
      (
        await c.query<{ column_name: string; data_type: string }>(
          `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`,
        )
      ).rows,
    );
    expect(columns.map((c) => c.column_name)).toEqual([
      'id',
      'checksum',
      'finished_at',
      'migration_name',
      'logs',
      'rolled_back_at',
      'started_at',
      'applied_steps_count',
    ]);
  });

  it('refuses a migration changed after it was applied, but accepts the same file with CRLF line endings', async () => {
    const db = await createScratchDatabase('checksum');
    const dir = await tempMigrations({
      '001_first': 'CREATE TABLE a (id int);\nCREATE TABLE b (id int);\n',
      '002_second': 'CREATE TABLE c (id int);\n',
    });
    try {
      expect((await applyMigrations(db.url, { dir })).applied).toEqual(['001_first', '002_second']);
      const file = path.join(dir, '001_first', 'migration.sql');

      await fs.writeFile(file, 'CREATE TABLE a (id int);\r\nCREATE TABLE b (id int);\r\n');
      expect((await applyMigrations(db.url, { dir })).applied).toEqual([]);

      await fs.writeFile(file, 'CREATE TABLE a (id bigint);\nCREATE TABLE b (id int);\n');
      await expect(applyMigrations(db.url, { dir })).rejects.toThrow(/001_first\/migration\.sql was changed after it was applied/);
    } finally {
      await db.drop();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('rolls back a failing migration entirely and records nothing for it', async () => {
    const db = await createScratchDatabase('failing');
    const dir = await tempMigrations({
      '001_ok': 'CREATE TABLE ok (id int);\n',
      '002_bad': 'CREATE TABLE half (id int);\nSELECT * FROM no_such_table;\n',
    });
    try {
      await expect(applyMigrations(db.url, { dir })).rejects.toThrow(/002_bad failed and was rolled back: relation "no_such_table" does not exist/);
      expect((await rowsOf(db.url)).map((r) => r.migration_name)).toEqual(['001_ok']);
      const half = await withClient(db.url, async (c) => (await c.query(`SELECT to_regclass('half')::text AS t`)).rows[0].t);
      expect(half).toBeNull();
    } finally {
      await db.drop();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('lets concurrent runs on a fresh database succeed, each migration applied exactly once (advisory lock)', async () => {
    const db = await createScratchDatabase('concurrent');
    try {
      const runs = await Promise.all(Array.from({ length: 4 }, () => applyMigrations(db.url)));
      const local = await readMigrations();
      expect(runs.flatMap((r) => r.applied).sort()).toEqual(local.map((m) => m.name));
      expect((await rowsOf(db.url)).map((r) => r.migration_name)).toEqual(local.map((m) => m.name));
    } finally {
      await db.drop();
    }
  });
});

describe('openDatabase', () => {
  it('gives a working PrismaClient over the shared pool; close() is idempotent', async () => {
    const db = await openDatabase(testDatabaseUrl(), { max: 2 });
    try {
      const id = `storage-${Date.now()}`;
      await db.prisma.project.create({ data: { id, name: 'Storage test' } });
      const found = await db.prisma.project.findUnique({ where: { id } });
      expect(found).toMatchObject({ id, status: 'active', dailySendQuota: 1000 });
      const viaPool = await db.pool.query('SELECT name FROM projects WHERE id = $1', [id]);
      expect(viaPool.rows[0].name).toBe('Storage test');
      await db.prisma.project.delete({ where: { id } });
    } finally {
      await db.close();
      await db.close();
    }
    expect(db.pool.ended).toBe(true);
  });

  it('fails at once with a clear message, without the password, when the server is unreachable', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const attempt = openDatabase(`postgres://u:s3cret@127.0.0.1:${port}/x`);
    await expect(attempt).rejects.toThrow(new RegExp(`Cannot connect to PostgreSQL at postgres://u:\\*\\*\\*@127\\.0\\.0\\.1:${port}/x: .*ECONNREFUSED`));
  });
});

describe('startEmbeddedPostgres', () => {
  let workDir: string;
  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-embedded-'));
    await fs.chmod(workDir, 0o755); // mkdtemp makes it 0700, which the postgres user could not enter
  });
  afterAll(async () => {
    await fs.rm(workDir, { recursive: true, force: true });
  });

  it('says which port is busy and names EMBEDDED_PG_PORT, and leaves no signal handlers behind', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
    const before = signals.map((s) => process.listenerCount(s));
    try {
      await expect(startEmbeddedPostgres({ dataDir: path.join(workDir, 'busy'), port })).rejects.toThrow(
        new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use.*EMBEDDED_PG_PORT`),
      );
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
    expect(signals.map((s) => process.listenerCount(s))).toEqual(before);
  }, 60_000);
});

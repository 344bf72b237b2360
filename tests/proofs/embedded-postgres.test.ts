/**
 * The embedded PostgreSQL has no known password and the service is not its superuser: a local
 * process trying `postgres`/`postgres` is refused, the service connects as a role that owns its
 * database (migrations included) without superuser rights, and a data folder of the old scheme
 * is converted on its first start without losing anything.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { chmod, rm, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { fallbackPgDir, readEmbeddedCredentials, startEmbeddedPostgres, type EmbeddedPostgres } from '../../lib/platform/db/embedded.js';
import { applyMigrations } from '../../lib/platform/db/migrate.js';
import { freePort, tempFolder } from '../support/local.js';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const quiet = { info: () => undefined, warn: () => undefined };
const folders: string[] = [];
const servers: EmbeddedPostgres[] = [];

afterAll(async () => {
  for (const s of servers) await s.stop().catch(() => undefined);
  for (const f of folders) await rm(f, { recursive: true, force: true });
}, 30_000);

async function folder(): Promise<string> {
  const dir = await tempFolder('svc-pgcred-');
  folders.push(dir);
  return dir;
}

async function query<T = any>(url: string, sql: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}

const asLegacySuperuser = (port: number) => `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;

describe('embedded PostgreSQL credentials', () => {
  it('When it starts on a new folder, then postgres/postgres is refused and the service role owns its database without being a superuser', async () => {
    const dir = await folder();
    const port = await freePort();
    const server = await startEmbeddedPostgres({ dataDir: dir, port, logger: quiet });
    servers.push(server);
    await expect(query(asLegacySuperuser(port), 'SELECT 1')).rejects.toMatchObject({ code: '28P01' });
    expect((await stat(path.join(dir, 'pg-credentials.json'))).mode & 0o777).toBe(0o600);
    expect(new URL(server.url).username).toBe('service');
    await applyMigrations(server.url, { logger: quiet });
    const [me] = await query(server.url, `SELECT rolsuper, rolcreaterole, (SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()) AS owner FROM pg_roles WHERE rolname = current_user`);
    expect(me).toEqual({ rolsuper: false, rolcreaterole: true, owner: 'service' });
    // Superuser-only powers are refused to the service: reading server files, running programs.
    await expect(query(server.url, `COPY (SELECT 1) TO PROGRAM 'true'`)).rejects.toMatchObject({ code: '42501' });
    await server.stop();
  }, 60_000);

  it('When a folder of the old scheme (postgres/postgres, objects owned by the superuser) starts, then the password is rotated and ownership handed over with the data kept', async () => {
    const dir = await folder();
    const port = await freePort();
    let server = await startEmbeddedPostgres({ dataDir: dir, port, logger: quiet });
    servers.push(server);
    // Put the folder back in the old state: the default password, no credentials file, the
    // database and a table with a row owned by the superuser.
    await query(server.adminUrl, `ALTER DATABASE service OWNER TO postgres`);
    const adminOfService = server.adminUrl.replace(/\/postgres$/, '/service');
    await query(adminOfService, `CREATE TABLE legacy (id serial PRIMARY KEY, v text); INSERT INTO legacy (v) VALUES ('kept')`);
    await query(server.adminUrl, `ALTER ROLE postgres PASSWORD 'postgres'`);
    await server.stop();
    await unlink(path.join(dir, 'pg-credentials.json'));

    server = await startEmbeddedPostgres({ dataDir: dir, port, logger: quiet });
    servers.push(server);
    await expect(query(asLegacySuperuser(port), 'SELECT 1')).rejects.toMatchObject({ code: '28P01' });
    expect(await readEmbeddedCredentials(dir)).toBeDefined();
    const rows = await query(server.url, `SELECT v FROM legacy`);
    expect(rows).toEqual([{ v: 'kept' }]);
    await query(server.url, `INSERT INTO legacy (v) VALUES ('new')`); // the sequence is the service's too
    const [owner] = await query(server.url, `SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relname = 'legacy'`);
    expect(owner.owner).toBe('service');
    await server.stop();
  }, 60_000);
});

describe('after kill -9', () => {
  it('When the service was killed with SIGKILL and left its PostgreSQL running, then the next start stops that server and starts', async () => {
    const dir = await folder();
    const port = await freePort();
    const embedded = fileURLToPath(new URL('../../lib/platform/db/embedded.ts', import.meta.url));
    const script = path.join(dir, 'start.mts');
    await writeFile(script, `import { startEmbeddedPostgres } from ${JSON.stringify(embedded)};\nawait startEmbeddedPostgres({ dataDir: ${JSON.stringify(dir)}, port: ${port} });\nconsole.log('READY');\nsetInterval(() => {}, 1000);\n`);
    const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (c) => String(c).includes('READY') && resolve());
      child.once('exit', (code) => reject(new Error(`child exited ${code}`)));
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const leftover = Number((await import('node:fs')).readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    expect(() => process.kill(leftover, 0)).not.toThrow(); // the orphan still runs

    const server = await startEmbeddedPostgres({ dataDir: dir, port, logger: quiet });
    servers.push(server);
    expect(await query(server.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
    expect(() => process.kill(leftover, 0)).toThrow();
    await server.stop();
  }, 60_000);
});

describe('a data folder the postgres user cannot enter', () => {
  it('When root runs from inside a 0700 folder, then the database files go to a place postgres can enter, the same on every start', async () => {
    if (process.getuid?.() !== 0) return; // only root runs PostgreSQL as another user
    const outer = await folder();
    await chmod(outer, 0o700);
    const dataDir = path.join(outer, 'data');
    const port = await freePort();
    const fallback = fallbackPgDir(dataDir);
    try {
      let server = await startEmbeddedPostgres({ dataDir, port, logger: quiet });
      servers.push(server);
      expect((await import('node:fs')).existsSync(path.join(fallback, 'PG_VERSION'))).toBe(true);
      await query(server.url, 'CREATE TABLE kept (v text); INSERT INTO kept VALUES (\'yes\')');
      await server.stop();
      server = await startEmbeddedPostgres({ dataDir, port, logger: quiet });
      servers.push(server);
      expect(await query(server.url, 'SELECT v FROM kept')).toEqual([{ v: 'yes' }]);
      await server.stop();
      // The user deletes the data folder to start afresh: the old files (whose password went with
      // the folder) are moved aside, not reused, and a new database starts.
      await rm(dataDir, { recursive: true, force: true });
      server = await startEmbeddedPostgres({ dataDir, port, logger: quiet });
      servers.push(server);
      expect(await query(server.url, "SELECT to_regclass('kept') IS NULL AS fresh")).toEqual([{ fresh: true }]);
      await server.stop();
      const aside = (await import('node:fs')).readdirSync(path.dirname(fallback)).filter((n) => n.startsWith('pg.orphaned-'));
      expect(aside).toHaveLength(1);
    } finally {
      await rm(path.dirname(fallback), { recursive: true, force: true });
    }
  }, 60_000);
});

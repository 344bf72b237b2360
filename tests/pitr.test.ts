/**
 * Point-in-time recovery with pgBackRest (issue 71 item 4; docs/deploy.md "Point-in-time
 * recovery"), as an operator runs it: a PostgreSQL 15 cluster of the test's own (initdb on a port
 * and in a folder of its own) archiving its WAL with pgBackRest into a repository in that folder;
 * a full backup; the service (in-process) acknowledges a first write, then a second one, and an
 * incremental backup is taken after both; the cluster is lost (stopped), and `pgbackrest restore
 * --type=time` to a moment between the two writes makes a new cluster that holds the first and
 * not the second. Times are printed.
 * Needs root, Debian's pgbackrest and PostgreSQL 15 server binaries; otherwise it says why it skipped.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import request from 'supertest';
import { applyMigrations } from '../lib/platform/db/migrate.js';
import { startTestApp, type TestApp } from './support/app.js';
import { freePort } from './support/local.js';

const BIN = '/usr/lib/postgresql/15/bin';
const STANZA = 'messaging';
const quiet = { info: () => undefined, warn: () => undefined };

function skipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root (PostgreSQL and pgBackRest run as the user postgres)';
  if (!existsSync(path.join(BIN, 'initdb'))) return 'no PostgreSQL 15 server binaries (apt-get install postgresql-15)';
  try {
    execFileSync('sh', ['-c', 'command -v pgbackrest'], { stdio: 'ignore' });
  } catch {
    return 'no pgbackrest (apt-get install pgbackrest)';
  }
  return undefined;
}
const skip = skipReason();
if (skip) console.log(`pitr: skipped: ${skip}`);
const describeIf = skip ? describe.skip : describe;

/** Runs a command as the user postgres; rejects with its output when it fails. */
function asPostgres(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('runuser', ['-u', 'postgres', '--', cmd, ...args], { timeout: 120_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stdout}\n${stderr}`)) : resolve(String(stdout)));
  });
}

describeIf('point-in-time recovery with pgBackRest', () => {
  let dir = '';
  let conf = '';
  let port = 0;
  const running: string[] = [];
  let t: TestApp | undefined;
  const pgbackrest = (...args: string[]) => asPostgres('pgbackrest', [`--config=${conf}`, `--stanza=${STANZA}`, ...args]);
  const pgCtl = (data: string, ...args: string[]) => asPostgres(path.join(BIN, 'pg_ctl'), ['-D', data, ...args]);
  const startCluster = async (data: string, p: number, extra: string) => {
    await pgCtl(data, '-w', '-l', path.join(dir, 'run', `${path.basename(data)}.log`), '-o', `-p ${p} -k ${path.join(dir, 'run')} -c listen_addresses=127.0.0.1 ${extra}`, 'start');
    running.push(data);
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'pitr-'));
    chmodSync(dir, 0o755);
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    for (const d of ['data', 'repo', 'run', 'restored']) {
      mkdirSync(path.join(dir, d), { mode: 0o700 });
      chownSync(path.join(dir, d), uid, gid);
    }
    port = await freePort();
    // The operator's file (docs/deploy.md): the repository, retention, and the cluster it backs up.
    conf = path.join(dir, 'pgbackrest.conf');
    writeFileSync(conf, [
      '[global]', `repo1-path=${path.join(dir, 'repo')}`, 'repo1-retention-full=2', `log-path=${path.join(dir, 'run')}`,
      `lock-path=${path.join(dir, 'run')}`, 'log-level-console=warn', 'start-fast=y', '',
      `[${STANZA}]`, `pg1-path=${path.join(dir, 'data')}`, `pg1-port=${port}`, `pg1-socket-path=${path.join(dir, 'run')}`, '',
    ].join('\n'), { mode: 0o644 });
    await asPostgres(path.join(BIN, 'initdb'), ['-D', path.join(dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8']);
    await startCluster(path.join(dir, 'data'), port, `-c wal_level=replica -c archive_mode=on -c "archive_command=pgbackrest --config=${conf} --stanza=${STANZA} archive-push %p"`);
  }, 120_000);

  afterAll(async () => {
    await t?.close().catch(() => undefined);
    for (const data of running) await pgCtl(data, '-m', 'immediate', 'stop').catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('When the cluster is restored to a moment between two acknowledged writes, then the first is there and the second is not', async () => {
    const times: Record<string, number> = {};
    const timed = async <T>(name: string, fn: () => Promise<T>) => {
      const t0 = Date.now();
      const out = await fn();
      times[name] = Date.now() - t0;
      return out;
    };
    await timed('stanza-create and check', async () => {
      await pgbackrest('stanza-create');
      await pgbackrest('check');
    });
    const admin = `postgres://postgres@127.0.0.1:${port}`;
    const c = new pg.Client({ connectionString: `${admin}/postgres` });
    await c.connect();
    await c.query('CREATE DATABASE messaging');
    await c.end();
    const url = `${admin}/messaging`;
    await applyMigrations(url, { logger: quiet });
    await timed('full backup', () => pgbackrest('--type=full', 'backup'));

    t = await startTestApp({ databaseUrl: url, config: { devAllowPrivateTargets: true } });
    const project = await t.admin.project('pitr');
    const key = (await t.admin.key(project.id, ['webhooks:manage'])).secret;
    const register = (name: string) =>
      request(t!.app).post('/v1/webhooks').set('Authorization', `Bearer ${key}`).send({ url: `http://127.0.0.1:9/${name}`, events: ['pitr.check'] });
    expect((await register('first')).status).toBe(201);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    // The target: after the first write's commit, before the second's (the server's own clock).
    const target = (await db.query<{ at: string }>("SELECT to_char(clock_timestamp(), 'YYYY-MM-DD HH24:MI:SS.USOF') AS at")).rows[0].at;
    await db.query('SELECT pg_sleep(0.05)');
    expect((await register('second')).status).toBe(201);
    await db.query('SELECT pg_switch_wal()');
    await db.end();
    await timed('incremental backup', () => pgbackrest('--type=incr', 'backup'));
    const info = await pgbackrest('info');
    expect(info).toMatch(/full backup/);
    expect(info).toMatch(/incr backup/);
    await t.close();
    t = undefined;

    // The cluster is lost; a new one is restored to the target and promoted.
    await pgCtl(path.join(dir, 'data'), '-m', 'fast', 'stop');
    running.splice(running.indexOf(path.join(dir, 'data')), 1);
    const restored = path.join(dir, 'restored');
    await timed('restore', () => pgbackrest(`--pg1-path=${restored}`, '--type=time', `--target=${target}`, '--target-action=promote', 'restore'));
    const restoredPort = await freePort();
    await timed('recovery to the target', async () => {
      await startCluster(restored, restoredPort, '-c archive_mode=off');
      for (let i = 0; ; i++) {
        const r = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${restoredPort}/messaging` });
        r.on('error', () => undefined);
        await r.connect().catch(() => undefined);
        const ok = await r.query<{ rec: boolean }>('SELECT pg_is_in_recovery() AS rec').then((x) => !x.rows[0].rec, () => false);
        await r.end().catch(() => undefined);
        if (ok || i > 100) break;
        await new Promise((res) => setTimeout(res, 200));
      }
    });
    const r = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${restoredPort}/messaging` });
    await r.connect();
    const urls = (await r.query<{ url: string }>('SELECT url FROM webhook_endpoints ORDER BY created_at')).rows.map((x) => x.url);
    await r.end();
    console.log(`pitr: target ${target}; ${Object.entries(times).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(', ')}`);
    expect(urls).toEqual(['http://127.0.0.1:9/first']);
  }, 240_000);
});

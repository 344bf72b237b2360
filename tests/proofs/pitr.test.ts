/**
 * The point-in-time recovery drill (issue 71 item 4; docs/deploy.md "Point-in-time recovery"), as
 * an operator runs it with Debian's pgBackRest: a PostgreSQL cluster of the test's own archives its
 * WAL with `pgbackrest archive-push` (the HA primary's setting, scripts/ha/pgbackrest.conf), a full
 * backup is taken, a service instance on it sends a first message, an incremental backup is taken,
 * a restore point is named, a second message is sent. Then the cluster is restored to that point:
 * the first send is there and the second is not, and a new instance on the restored database serves
 * the project. Times are printed.
 * Needs Debian's PostgreSQL server binaries and pgbackrest (CI installs both); otherwise it says why
 * it skipped.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import request from 'supertest';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { initCluster, ownClusterSkipReason, ownedByPostgres, run, type OwnCluster } from '../support/own-cluster.js';
import { ServiceProcess, stopAll } from '../support/service-process.js';

function hasPgBackRest(): boolean {
  try {
    execFileSync('pgbackrest', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const skipReason = ownClusterSkipReason() ?? (hasPgBackRest() ? undefined : 'no pgbackrest (apt-get install pgbackrest)');
if (skipReason) console.log(`pitr: skipped: ${skipReason}`);
const describeIf = skipReason ? describe.skip : describe;
const STANZA = 'drill';

describeIf('point-in-time recovery drill', () => {
  let sim: Simulator;
  let simServer: http.Server;
  let simUrl = '';
  let work = '';
  let cluster: OwnCluster | undefined;
  let conf = '';
  const timings: string[] = [];

  /** pgbackrest with the drill's configuration, as the cluster's owner. */
  const backrest = async (...args: string[]) => {
    const started = Date.now();
    const r = await run('pgbackrest', [`--config=${conf}`, `--stanza=${STANZA}`, ...args], { asPostgres: true, timeoutMs: 180_000 });
    if (r.code !== 0) throw new Error(`pgbackrest ${args.join(' ')} failed (${r.code}): ${r.err || r.out}`);
    timings.push(`${args[0]}${args.find((a) => a.startsWith('--type=')) ? ' ' + args.find((a) => a.startsWith('--type='))!.slice(7) : ''} ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return r.out;
  };

  beforeAll(async () => {
    sim = createSimulator({ autoStatusDelaysMs: null, templateAutoDecisionMs: 50 });
    simServer = http.createServer(sim.app);
    await new Promise<void>((r) => simServer.listen(0, '127.0.0.1', () => r()));
    simUrl = `http://127.0.0.1:${(simServer.address() as AddressInfo).port}`;
    work = path.join(tmpdir(), `pitr-drill-${randomBytes(4).toString('hex')}`);
    for (const d of ['', 'repo', 'log', 'lock', 'spool']) ownedByPostgres(path.join(work, d));
    conf = path.join(work, 'pgbackrest.conf');
  });

  afterAll(async () => {
    await stopAll();
    await cluster?.stop('immediate');
    await sim?.close();
    simServer?.closeAllConnections();
    simServer?.close();
    if (timings.length) console.log(`pitr: ${timings.join('; ')}`);
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('When the cluster is restored to a restore point named between two sends, then the first send is there and the second is not, and a new instance serves the project', async () => {
    const dataDir = path.join(work, 'pg');
    // As scripts/ha/pgbackrest.conf configures the HA primary, with this drill's paths.
    cluster = await initCluster(dataDir, {
      wal_level: 'replica',
      archive_mode: 'on',
      archive_command: `pgbackrest --config=${conf} --stanza=${STANZA} archive-push %p`,
      max_wal_senders: '3',
    });
    writeFileSync(conf, [
      '[global]',
      `repo1-path=${path.join(work, 'repo')}`,
      'repo1-retention-full=2',
      `log-path=${path.join(work, 'log')}`,
      `lock-path=${path.join(work, 'lock')}`,
      `spool-path=${path.join(work, 'spool')}`,
      'log-level-console=warn',
      'start-fast=y',
      '',
      `[${STANZA}]`,
      `pg1-path=${dataDir}`,
      `pg1-port=${cluster.port}`,
      `pg1-socket-path=${cluster.socketDir}`,
      '',
    ].join('\n'));
    await cluster.start();
    const admin = new pg.Client({ connectionString: cluster.url() });
    await admin.connect();
    await admin.query('CREATE DATABASE messaging');
    await admin.end();
    await backrest('stanza-create');
    await backrest('check');
    await backrest('backup', '--type=full');

    // A running instance: a project, a customer who wrote, a first send.
    const adminToken = randomBytes(24).toString('hex');
    const common = { adminToken, encryptionKey: randomBytes(32).toString('hex'), simulatorUrl: simUrl };
    const a = await ServiceProcess.start({ ...common, databaseUrl: cluster.url('messaging') });
    const project = (await request(a.url).post('/admin/projects').set('Authorization', `Bearer ${adminToken}`).send({ name: 'pitr drill' }).expect(201)).body.data.project;
    const key = (await request(a.url).post(`/admin/projects/${project.id}/keys`).set('Authorization', `Bearer ${adminToken}`).send({ name: 'drill', scopes: ['messages:send', 'conversations:read'] }).expect(201)).body.data.secret as string;
    const pnid = (await request(a.url).get(`/admin/projects/${project.id}/channel`).set('Authorization', `Bearer ${adminToken}`).expect(200)).body.data.channel.phone_number_id as string;
    await request(simUrl).post('/_sim/inbound').send({ phone_number_id: pnid, from: '14155550101', name: 'Ada', text: 'hi' }).expect(200);
    const send = (content: string) => request(a.url).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: '+14155550101', content }).expect(200);
    const first = (await send('first, before the point')).body.data.id as string;
    await backrest('backup', '--type=incr');
    const db = new pg.Client({ connectionString: cluster.url('messaging') });
    await db.connect();
    // The point an operator restores to: named, so the drill does not depend on clocks.
    await db.query(`SELECT pg_create_restore_point('before_second_send')`);
    const second = (await send('second, after the point')).body.data.id as string;
    const stored = async (c: pg.Client) => (await c.query<{ wamid: string }>(`SELECT wamid FROM messages WHERE direction = 'outbound' ORDER BY id`)).rows.map((r) => r.wamid);
    expect(await stored(db)).toEqual([first, second]);
    // The WAL holding the point (and the second send) archived, as it is within archive_timeout in production.
    await db.query('SELECT pg_switch_wal()');
    await db.query('CHECKPOINT');
    await db.end();
    await a.kill();

    // The restore, as docs/deploy.md says: stop, restore to the named point, start (it promotes).
    await cluster.stop();
    const restoreStarted = Date.now();
    await backrest('restore', '--delta', '--type=name', '--target=before_second_send', '--target-action=promote');
    await cluster.start();
    const restored = new pg.Client({ connectionString: cluster.url('messaging') });
    await restored.connect();
    // Recovery ends (promotion) before the server takes writes.
    for (let i = 0; i < 100 && (await restored.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r')).rows[0].r; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await stored(restored)).toEqual([first]);
    await restored.end();
    const restoreMs = Date.now() - restoreStarted;

    // A new instance on the restored database serves the project and sends again.
    const b = await ServiceProcess.start({ ...common, databaseUrl: cluster.url('messaging') });
    const listed = await request(b.url).get(`/v1/messages/${first}`).set('Authorization', `Bearer ${key}`);
    expect(listed.status).toBe(200);
    expect((await request(b.url).get(`/v1/messages/${second}`).set('Authorization', `Bearer ${key}`)).status).toBe(404);
    await request(b.url).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: '+14155550101', content: 'after the restore' }).expect(200);
    timings.push(`restored to the point and promoted in ${(restoreMs / 1000).toFixed(1)} s; the first send there, the second not; a new instance served the project`);
    await b.kill();
  }, 300_000);
});
